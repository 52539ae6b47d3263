#include "qkv/experiment/samples.h"

#include <algorithm>

#include "qkv/decode/translator.h"
#include "qkv/eval/by_length.h"

namespace qkv::experiment {

std::vector<size_t> pick_samples(std::span<const std::string> sources, size_t count) {
  constexpr int64_t kMinWords = 6, kMaxWords = 16;
  std::vector<size_t> picked;
  std::vector<bool> taken(sources.size(), false);
  for (size_t i = 0; i < sources.size() && picked.size() < count; ++i) {
    const int64_t words = eval::source_words(sources[i]);
    if (words >= kMinWords && words <= kMaxWords) {
      picked.push_back(i);
      taken[i] = true;
    }
  }
  for (size_t i = 0; i < sources.size() && picked.size() < count; ++i)
    if (!taken[i]) picked.push_back(i);
  std::sort(picked.begin(), picked.end());
  return picked;
}

std::optional<viz::AttentionMap> attention_sample(models::Seq2Seq& model, const data::Vocab& vocab,
                                                  std::string_view source,
                                                  const SearchSettings& settings,
                                                  std::string title) {
  const models::ModelConfig& c = model.config();
  if (!models::attends(c)) return std::nullopt;
  decode::TranslateOptions options;
  options.search.beam_size = settings.beam_size;
  options.search.normalize = settings.normalize;
  options.search.keep_attention = true;
  options.mini_batch = 1;
  const std::vector<std::string> one = {std::string(source)};
  const decode::SentenceResult r = decode::translate(model, vocab, one, options)[0];
  if (!r.ok()) return std::nullopt;
  const decode::TranslatedHypothesis& h = r.hypotheses[0];
  if (h.tokens.empty() || h.attention.empty()) return std::nullopt;
  const std::vector<int32_t> ids(r.source.begin(), r.source.end() - 1);

  // Rows [S, Ts] with Ts = source tokens + EOS: keep the T real steps and the real tokens.
  // Steps that emitted a control token (<pad>, <s>: a barely trained model does) write
  // nothing into the translation, so they get no row either.
  const size_t ts = r.source.size(), cols = ids.size();
  viz::AttentionMap map;
  map.source = vocab.pieces(ids);
  for (size_t t = 0; t < h.tokens.size(); ++t) {
    const int32_t id = h.tokens[t];
    if (id == vocab.pad_id() || id == vocab.bos_id() || id == vocab.eos_id()) continue;
    map.target.push_back(vocab.piece(id));
    for (size_t s = 0; s < cols; ++s) map.weights.push_back(h.attention[t * ts + s]);
  }
  if (map.target.empty()) return std::nullopt;
  map = viz::merge_subwords(map, viz::sentencepiece_word_starts(map.source),
                            viz::sentencepiece_word_starts(map.target));
  map.title = std::move(title);
  return map;
}

}  // namespace qkv::experiment
