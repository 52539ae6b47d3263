// The results of a comparison and the files they are written to:
//
//   compare.json         every measurement of every variant (read back by `qkv report`)
//   compare.csv          the same, one row per variant, for spreadsheets and plots
//   samples.json         attention maps of sample test sentences, per attending variant
//   bleu_by_length.svg   BLEU per source-length bucket, one bar per variant
//   report.html          one self-contained page: table, chart, heatmaps (make_report)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/viz/chart.h"
#include "qkv/viz/heatmap.h"
#include "qkv/viz/report.h"

namespace qkv::experiment {

inline constexpr const char* kCompareJson = "compare.json";
inline constexpr const char* kCompareCsv = "compare.csv";
inline constexpr const char* kSamplesJson = "samples.json";
inline constexpr const char* kChartSvg = "bleu_by_length.svg";
inline constexpr const char* kReportHtml = "report.html";

// One source-length bucket of the test set.
struct BucketResult {
  std::string label;  // "1-10", ..., "50+"
  int64_t sentences = 0;
  std::optional<double> bleu, chrf;  // unset for an empty bucket
  // BLEU's 95% bootstrap interval over the bucket's sentences (unset: empty bucket, or
  // the comparison ran without --bootstrap).
  std::optional<double> bleu_low, bleu_high;
  friend bool operator==(const BucketResult&, const BucketResult&) = default;
};

struct VariantResult {
  std::string name;            // "rnn:additive"
  std::string model_dir;       // relative to the comparison directory: "models/rnn-additive"
  std::string evaluated_file;  // the model file translated: "model.safetensors" or the best
  std::string config;          // the ModelConfig as JSON (models::to_json)
  int64_t parameters = 0;

  // Training.
  int64_t updates = 0;
  int64_t epochs = 0;        // completed passes over the training data
  std::string stop_reason;   // train::to_string(StopReason)
  double train_seconds = 0;  // the trainer's wall time (validation and checkpoints included)
  int64_t train_tokens = 0;  // source + target tokens of every update
  // Tokens per second of update time only: validation and checkpoint time left out, so
  // the number compares the models, not the validation settings.
  double train_tokens_per_second = 0;
  std::optional<double> best_valid_loss;  // cross-entropy per target token, when validated

  // Test set.
  int64_t test_sentences = 0;
  int64_t test_skipped = 0;  // sentences not translated (empty hypothesis)
  double bleu = 0, chrf = 0;
  std::string bleu_line, chrf_line;           // sacreBLEU's format with signature
  std::optional<double> bleu_low, bleu_high;  // 95% bootstrap interval of bleu
  std::vector<BucketResult> by_length;
  // Attention entropy on the test set (AttentionEntropy): the mean entropy in nats of an
  // attention row over the real source tokens while the model reads the references, and
  // that of a uniform row over the same rows (log of the source length). Unset for
  // rnn:none, and in files written before qkv measured it.
  std::optional<double> attention_entropy, attention_entropy_uniform;
  double decode_seconds = 0;
  double decode_sentences_per_second = 0;

  // Resources: peak resident memory while this variant trained and was evaluated (the
  // shared corpora and vocabulary included). per_variant false: the reset was refused,
  // so it is the process's peak so far.
  int64_t peak_rss_bytes = 0;
  bool peak_rss_per_variant = true;
  double wall_seconds = 0;  // training + evaluation

  friend bool operator==(const VariantResult&, const VariantResult&) = default;
};

struct Comparison {
  std::string title = "qkv comparison";
  std::vector<std::string> notes;  // what was run: command, data, budget, search, machine
  std::vector<VariantResult> variants;
  friend bool operator==(const Comparison&, const Comparison&) = default;
};

// compare.json's text (pretty-printed), and back. comparison_from_json throws IoError
// starting with `origin` (the file) and naming the key for malformed JSON, a missing key
// or a value of the wrong type.
std::string to_json(const Comparison& comparison);
Comparison comparison_from_json(std::string_view json, std::string_view origin);

// compare.csv: a header and one row per variant (RFC 4180 quoting), with a "bleu <label>"
// and "sentences <label>" column per bucket of the first variant.
std::string to_csv(const Comparison& comparison);

// The one table `qkv compare` prints and the report shows: variant, BLEU, chrF, BLEU per
// bucket that holds test sentences ("BLEU 1-10 (n=612)"), training tokens/s, decode
// sentences/s, parameters, peak RSS, wall time. Numbers formatted for reading.
viz::ReportTable summary_table(const Comparison& comparison);
// The table as aligned plain text (text left, numbers right), one line per row.
std::string format_table(const viz::ReportTable& table);

// BLEU by source-length bucket, one series per variant (buckets without sentences left
// out). ValueError when there are no variants or they disagree on the buckets.
viz::BucketChart bleu_chart(const Comparison& comparison);

// samples.json: attention maps (source and target words, weights, title), and back.
std::string samples_to_json(const std::vector<viz::AttentionMap>& samples);
std::vector<viz::AttentionMap> samples_from_json(std::string_view json, std::string_view origin);

// The HTML report's content: title, notes, table, chart and the sample heatmaps.
viz::Report make_report(const Comparison& comparison, std::vector<viz::AttentionMap> samples);

// Writes compare.json, compare.csv, bleu_by_length.svg and samples.json into `dir`, each
// atomically. IoError naming the file when one cannot be written.
void write_results(const std::filesystem::path& dir, const Comparison& comparison,
                   const std::vector<viz::AttentionMap>& samples);

// Reads dir/compare.json and dir/samples.json (optional: no heatmaps without it) and
// writes the report to `output` atomically. IoError naming the file when compare.json is
// missing or malformed ("run `qkv compare --out DIR` first").
void write_report(const std::filesystem::path& dir, const std::filesystem::path& output);

}  // namespace qkv::experiment
