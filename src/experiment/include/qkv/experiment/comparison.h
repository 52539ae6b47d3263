// A comparison of systems, typed: several variants trained on the same data with the same
// vocabulary, seed and budget, then translated, scored and measured on one test set.
// `qkv compare` fills a ComparisonSpec from its flags (comparison_flags.h), `qkv demo`
// in C++ (demo.h); both then call run_comparison.
//
//   experiment::ComparisonSpec spec;
//   spec.train_sets = {"train.en", "train.de"};
//   spec.test_sets = {"test.en", "test.de"};
//   spec.variants = experiment::parse_variants("rnn:none,transformer");
//   spec.train.after = "10m";
//   const experiment::Comparison c = experiment::run_comparison(spec, &std::cerr);
//
// Its files in spec.out: compare.{csv,json}, bleu_by_length.svg, samples.json (results.h),
// vocab.spm (unless spec.vocab), models/<variant>/, hyps/<variant>.txt, and report.html
// with spec.report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "qkv/experiment/results.h"
#include "qkv/experiment/settings.h"
#include "qkv/experiment/test_set.h"
#include "qkv/experiment/variant.h"

namespace qkv::experiment {

inline constexpr const char* kDefaultVariants = "rnn:none,rnn:dot,rnn:additive,transformer";
// Each variant's training budget unless the spec gives one (`qkv train` defaults to 20e).
inline constexpr const char* kDefaultComparisonBudget = "5m";

// TrainSettings with the comparison's default budget.
inline TrainSettings comparison_train_settings() {
  TrainSettings t;
  t.after = kDefaultComparisonBudget;
  return t;
}

struct ComparisonSpec {
  // The data: every variant trains on the same pairs with the same vocabulary.
  CorpusFiles train_sets;
  std::optional<CorpusFiles> valid_sets;       // unset: no validation
  CorpusFiles test_sets;                       // sources and references
  std::optional<std::filesystem::path> vocab;  // unset: trained into out/vocab.spm
  int64_t max_sentences = 0;  // > 0: only the first N pairs of every set (smoke tests)

  // The systems. Each variant sets the type and attention (transformer:h<N> also the
  // heads) over `model`; `train` holds what they share, its `after` the budget of each.
  std::vector<Variant> variants = parse_variants(kDefaultVariants);
  ModelSettings model;
  TrainSettings train = comparison_train_settings();

  // The test set's evaluation.
  SearchSettings search;
  int64_t samples = 3;       // test sentences whose attention the report shows
  int64_t bootstrap = 1000;  // resampled test sets for BLEU's 95% interval; 0: none
  bool entropy = true;       // measure attention entropy on the test references

  // The output.
  std::filesystem::path out = "compare";
  std::string title = "qkv comparison";
  bool report = false;     // also write out/report.html
  bool overwrite = false;  // replace model directories an earlier comparison left
  // Keep the variants an earlier comparison in `out` finished (in its compare.json, with
  // a model file): they are evaluated again, not retrained; out/vocab.spm is reused too.
  bool reuse = false;
  std::string command;  // how the run was started, for the notes ("qkv compare ...")

  friend bool operator==(const ComparisonSpec&, const ComparisonSpec&) = default;
};

// Checks every field and every variant's model and training settings without reading a
// file (a vocabulary takes minutes to train): FieldError naming the field.
void check(const ComparisonSpec& spec);

// Runs the comparison: checks the spec, prepares out/ (FieldError naming `out` when it
// holds models of an earlier run and neither overwrite nor reuse says what to do), reads
// the data once, trains and evaluates each variant in turn (progress lines on `log`, may
// be nullptr), and writes the result files after every variant, so an interrupted run
// keeps what it finished. Returns what compare.json holds. Errors: check's, the data's
// (IoError, ValueError naming files), the trainer's and the loader's.
Comparison run_comparison(const ComparisonSpec& spec, std::ostream* log);

}  // namespace qkv::experiment
