#include "qkv/experiment/test_set.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "qkv/base/error.h"
#include "qkv/data/batcher.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/decode/beam_search.h"
#include "qkv/decode/greedy.h"

namespace qkv::experiment {

data::Batch source_batch(const std::vector<std::vector<int32_t>>& rows,
                         const models::ModelConfig& config) {
  data::TokenizedCorpus corpus;
  corpus.source = rows;
  corpus.line_numbers.resize(rows.size());
  std::vector<int64_t> indices(rows.size());
  std::iota(indices.begin(), indices.end(), 0);
  data::BatchOptions options;
  options.pad_id = int32_t(config.pad_id);
  options.bos_id = int32_t(config.bos_id);
  options.eos_id = int32_t(config.eos_id);
  return data::make_batch(corpus, indices, options);
}

namespace {

// One mini-batch of token rows -> output ids per row.
std::vector<std::vector<int32_t>> search(models::Seq2Seq& model,
                                         const std::vector<std::vector<int32_t>>& rows,
                                         const decode::BeamSearchOptions& options) {
  const data::Batch b = source_batch(rows, model.config());
  if (options.beam_size == 1) {
    // beam_search's contract: beam size 1 makes greedy_decode's choices; this is the
    // cheaper path to them. The length limit is the longest row's.
    int64_t limit = 1;
    for (const int64_t n : b.src_lengths)
      limit = std::max(limit, decode::max_target_length(options, n, model.config()));
    std::vector<std::vector<int32_t>> out =
        decode::greedy_decode(model, b.src, b.src_lengths, limit);
    for (size_t i = 0; i < out.size(); ++i) {
      const auto own = size_t(decode::max_target_length(options, b.src_lengths[i], model.config()));
      if (out[i].size() > own) out[i].resize(own);
    }
    return out;
  }
  std::vector<std::vector<int32_t>> out;
  for (auto& hyps : decode::beam_search(model, b.src, b.src_lengths, options))
    out.push_back(std::move(hyps.front().tokens));
  return out;
}

}  // namespace

TestSet read_test_set(const std::filesystem::path& source, const std::filesystem::path& reference,
                      int64_t max_sentences) {
  data::ParallelCorpus corpus = data::read_parallel_corpus(source, reference);
  TestSet t{.sources = std::move(corpus.source),
            .references = std::move(corpus.target),
            .source_file = source,
            .reference_file = reference};
  if (max_sentences > 0 && int64_t(t.sources.size()) > max_sentences) {
    t.sources.resize(size_t(max_sentences));
    t.references.resize(size_t(max_sentences));
  }
  QKV_CHECK(!t.sources.empty(), ValueError, "the test set ", source.string(), " / ",
            reference.string(), " has no sentence pair to translate");
  return t;
}

TestTranslation translate_sentences(models::Seq2Seq& model, const data::Vocab& vocab,
                                    std::span<const std::string> sources,
                                    const SearchSettings& settings) {
  QKV_CHECK(settings.mini_batch >= 1, ConfigError, "mini-batch ", settings.mini_batch,
            " must be at least 1");
  decode::BeamSearchOptions options;
  options.beam_size = settings.beam_size;
  options.normalize = settings.normalize;
  decode::validate(options);
  model.set_training(false);
  const models::ModelConfig& config = model.config();
  const int64_t max_tokens = models::max_sequence_tokens(config);
  const auto start = std::chrono::steady_clock::now();
  TestTranslation t;
  t.hypotheses.resize(sources.size());
  std::vector<std::vector<int32_t>> rows(sources.size());
  std::vector<size_t> usable;
  for (size_t i = 0; i < sources.size(); ++i) {
    rows[i] = vocab.encode(sources[i]);
    if (rows[i].empty() || int64_t(rows[i].size()) > max_tokens)
      ++t.skipped;
    else
      usable.push_back(i);
  }
  std::stable_sort(usable.begin(), usable.end(),
                   [&](size_t a, size_t b) { return rows[a].size() < rows[b].size(); });
  const auto mini = size_t(settings.mini_batch);
  for (size_t begin = 0; begin < usable.size(); begin += mini) {
    const size_t end = std::min(usable.size(), begin + mini);
    std::vector<std::vector<int32_t>> batch;
    for (size_t k = begin; k < end; ++k) batch.push_back(rows[usable[k]]);
    const std::vector<std::vector<int32_t>> out = search(model, batch, options);
    for (size_t k = begin; k < end; ++k) t.hypotheses[usable[k]] = vocab.decode(out[k - begin]);
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

TestScores score_translations(const TestSet& test, std::span<const std::string> hypotheses,
                              const std::optional<eval::BootstrapOptions>& bootstrap) {
  QKV_CHECK(hypotheses.size() == test.references.size(), ValueError, "score: ", hypotheses.size(),
            " translations for ", test.references.size(), " references");
  const std::vector<std::vector<std::string>> refs = {test.references};
  TestScores scores{
      .bleu = eval::corpus_bleu(hypotheses, refs),
      .chrf = eval::corpus_chrf(hypotheses, refs),
      .by_length = eval::score_by_length(test.sources, hypotheses, refs, {.bootstrap = bootstrap})};
  if (bootstrap) scores.bleu_ci = eval::bootstrap_bleu(hypotheses, refs, {}, *bootstrap);
  return scores;
}

}  // namespace qkv::experiment
