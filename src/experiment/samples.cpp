#include "qkv/experiment/samples.h"

#include <algorithm>

#include "qkv/decode/alignment.h"
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

  // Words by the one merging rule (translate --alignment's, decode::word_starts): steps that
  // emitted a control token (<pad>, <s>: a barely trained model does) write nothing into the
  // translation, so they get no row; the source EOS gets no column.
  std::optional<viz::AttentionMap> map = decode::word_map(vocab, r.source, h.tokens, h.attention);
  if (!map) return std::nullopt;
  map->title = std::move(title);
  return map;
}

}  // namespace qkv::experiment
