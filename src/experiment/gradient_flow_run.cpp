// `qkv gradflow`'s measurement of model files: the pairs a model can measure, the series
// it gives, and the table that sets the series side by side.
#include <algorithm>
#include <chrono>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/format.h"
#include "qkv/decode/translator.h"
#include "qkv/experiment/gradient_flow.h"

namespace qkv::experiment {
namespace {

// "rnn:additive", "transformer" (the names of `qkv compare --variants`), " (init)" for
// fresh weights.
std::string series_name(const models::ModelConfig& c, bool init) {
  std::string name = c.type == models::ModelType::Rnn
                         ? "rnn:" + std::string(models::to_string(c.attention))
                         : std::string("transformer");
  return init ? name + " (init)" : name;
}

// The first max_sentences pairs within the lengths, tokenised with `vocab`; `skipped`
// counts those left out before the last one kept (empty after encoding, or outside).
data::TokenizedCorpus usable_pairs(const data::ParallelCorpus& corpus, const data::Vocab& vocab,
                                   const models::ModelConfig& config, const GradientFlowOptions& o,
                                   int64_t& skipped) {
  const data::TokenizedCorpus all = data::tokenize(corpus, vocab);
  const int64_t max_len = std::min(o.max_length, models::max_sequence_tokens(config));
  const auto limit = size_t(o.max_sentences);
  data::TokenizedCorpus kept;
  skipped = int64_t(corpus.source.size() - all.source.size());
  for (size_t i = 0; i < all.source.size() && kept.source.size() < limit; ++i) {
    const auto s = int64_t(all.source[i].size()), t = int64_t(all.target[i].size());
    if (s < o.min_length || s > max_len || t > max_len) {
      ++skipped;
      continue;
    }
    kept.source.push_back(all.source[i]);
    kept.target.push_back(all.target[i]);
    kept.line_numbers.push_back(all.line_numbers[i]);
  }
  return kept;
}

}  // namespace

GradientFlowRun measure_gradient_flow(const std::filesystem::path& path,
                                      const data::ParallelCorpus& corpus,
                                      const GradientFlowOptions& o) {
  QKV_CHECK(o.min_length >= 1 && o.max_sentences >= 1 && o.mini_batch >= 1, FieldError,
            "{min_length} ", o.min_length, ", {max_sentences} ", o.max_sentences,
            " and {mini_batch} ", o.mini_batch, " must be >= 1");
  QKV_CHECK(o.min_length <= o.max_length, FieldError, "{min_length} ", o.min_length,
            " exceeds {max_length} ", o.max_length);
  const decode::Translator tr = decode::Translator::load(path);
  std::unique_ptr<models::Seq2Seq> fresh;
  if (o.init) fresh = models::make_model(tr.model().config(), o.seed);
  models::Seq2Seq& model = o.init ? *fresh : tr.model();
  GradientFlowRun run;
  const data::TokenizedCorpus pairs =
      usable_pairs(corpus, tr.vocab(), model.config(), o, run.skipped);
  QKV_CHECK(!pairs.source.empty(), FieldIoError, "{model} ", path.string(),
            ": no pair of the corpus is within {min_length} ", o.min_length, " and {max_length} ",
            o.max_length, " subword tokens (", run.skipped, " skipped)");
  const auto start = std::chrono::steady_clock::now();
  const auto norms = gradient_norms(model, pairs, o.site, o.mini_batch);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.series = {series_name(model.config(), o.init), profile_by_position(norms)};
  run.sentences = int64_t(pairs.source.size());
  return run;
}

viz::ReportTable gradient_table(std::span<const GradientSeries> series) {
  bool same = true;
  size_t positions = 0;
  for (const GradientSeries& s : series) {
    same = same && s.profile.sentences == series[0].profile.sentences;
    positions = std::max(positions, s.profile.mean_norm.size());
  }
  viz::ReportTable t;
  t.columns.push_back("position");
  if (same) t.columns.push_back("sentences");
  for (const GradientSeries& s : series) {
    if (!same) t.columns.push_back("n " + s.name);
    t.columns.push_back(s.name);
  }
  for (size_t j = 0; j < positions; ++j) {
    std::vector<std::string> row{std::to_string(j + 1)};
    if (same) row.push_back(std::to_string(series[0].profile.sentences[j]));
    for (const GradientSeries& s : series) {
      const bool has = j < s.profile.mean_norm.size();
      if (!same) row.push_back(has ? std::to_string(s.profile.sentences[j]) : "0");
      row.push_back(has ? format_significant(s.profile.mean_norm[j], 4) : "-");
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace qkv::experiment
