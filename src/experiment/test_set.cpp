#include "qkv/experiment/test_set.h"

#include <chrono>

#include "qkv/base/error.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/decode/translator.h"

namespace qkv::experiment {

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
  decode::TranslateOptions options;
  options.search.beam_size = settings.beam_size;
  options.search.normalize = settings.normalize;
  options.mini_batch = settings.mini_batch;
  options.scores = false;  // only the text: beam size 1 takes the greedy path
  const auto start = std::chrono::steady_clock::now();
  const std::vector<decode::SentenceResult> results =
      decode::translate(model, vocab, sources, options);
  TestTranslation t;
  t.hypotheses.resize(sources.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok())
      t.hypotheses[i] = results[i].hypotheses.front().text;
    else
      ++t.skipped;
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
