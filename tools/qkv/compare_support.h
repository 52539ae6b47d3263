// What `qkv compare` needs besides its main loop: telling its own flags from the
// training flags it passes on, building each variant's training flags, loading the
// shared data once, and describing the run for the report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "qkv/cli/options.h"
#include "qkv/experiment/runner.h"
#include "qkv/experiment/test_set.h"
#include "qkv/experiment/variant.h"
#include "qkv/train/trainer.h"

namespace qkv::tool {

struct SplitArgs {
  std::vector<std::string> own;    // compare's flags (and --help)
  std::vector<std::string> train;  // everything else: `qkv train` flags
};

// Splits `args` (without program and command names): a flag `own` declares goes to
// `own` with its values (a list takes the values up to the next flag, as the parser
// does); --config/-c and every other token goes to `train`. A flag neither set knows is
// a ConfigError suggesting the nearest name of either set.
SplitArgs split_args(const cli::OptionSet& own, const std::vector<std::string>& args);

struct CompareSetup {
  std::vector<std::string> train_args;  // the training flags, --after defaulted
  cli::ParsedOptions shared;            // them parsed (with a placeholder --model)
  std::string budget;                   // --after
  std::vector<std::string> test_sets;   // source, reference
  std::string command;                  // the command line, for the report
};

// Parses the training flags once (ConfigError naming the flag), rejects --model, --type,
// --attention and --resume (compare sets them per variant), adds `--after
// default_budget` when no budget is given, and applies --threads.
CompareSetup compare_setup(std::vector<std::string> train_args, const std::filesystem::path& out,
                           const std::string& default_budget,
                           const std::vector<std::string>& test_sets);

// The variant's model config and trainer options from the flags, checked without a
// vocabulary (before any work). ConfigError naming the flag.
void check_variant_flags(const CompareSetup& setup, const experiment::Variant& variant,
                         const std::filesystem::path& out);
// The plan of `variant`: its model (for `vocab`) and trainer options, the model in
// out/models/<variant>.
experiment::VariantPlan variant_plan(const CompareSetup& setup, const experiment::Variant& variant,
                                     const data::Vocab& vocab, const std::filesystem::path& out);

struct CompareData {
  train::TrainingData training;  // vocabulary, training pairs, validation set (optional)
  experiment::TestSet test;
  std::string train_description;  // "29000 pairs from train.en.gz / train.de.gz"
  std::string valid_description;  // "" without validation
};

// The test set, the vocabulary (--vocab, else trained once into out/vocab.spm, or with
// `reuse_vocab` the out/vocab.spm an earlier run trained), the training pairs and the
// validation set, each cut to `max_sentences` pairs when > 0. Progress lines on `log`.
CompareData load_compare_data(const CompareSetup& setup, const std::filesystem::path& out,
                              int64_t max_sentences, std::ostream& log, bool reuse_vocab = false);

// The report's notes: the command, the data, what every variant shares, the machine and
// what each column means.
std::vector<std::string> comparison_notes(const CompareSetup& setup, const CompareData& data,
                                          const experiment::SearchSettings& search);

// The arguments as a shell would need them (single-quoted where necessary).
std::string quote_args(const std::vector<std::string>& args);

}  // namespace qkv::tool
