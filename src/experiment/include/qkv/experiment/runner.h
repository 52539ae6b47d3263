// One variant of a comparison, start to finish: train it under the shared budget, then
// translate and score the test set with the model it saved, measuring speed and memory.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "qkv/experiment/results.h"
#include "qkv/experiment/test_set.h"
#include "qkv/experiment/variant.h"
#include "qkv/models/config.h"
#include "qkv/train/trainer.h"

namespace qkv::experiment {

struct VariantPlan {
  Variant variant;
  models::ModelConfig config;
  train::TrainerOptions trainer;  // model_dir: where the model goes; log: trainer progress
  std::string label;              // prefix of this variant's progress lines: "[2/4 rnn:dot]"
};

struct EvalSettings {
  SearchSettings search;
  std::vector<size_t> sample_lines;  // test sentences whose attention is recorded
  // BLEU's bootstrap interval (whole test set and every length bucket); unset: none.
  std::optional<eval::BootstrapOptions> bootstrap;
  bool entropy = true;  // measure attention entropy on the test references
};

struct VariantOutcome {
  VariantResult result;  // model_dir as plan.trainer.model_dir (the caller may shorten it)
  std::vector<std::string> hypotheses;  // [N] translations of the test sources
  // Attention maps of the sample lines the model could show (none for rnn:none), and
  // the 0-based test sentence of each.
  std::vector<viz::AttentionMap> samples;
  std::vector<size_t> sample_lines;
};

// Trains plan.config on `data` with plan.trainer (a new run in plan.trainer.model_dir),
// then loads the model it saved -- model.best.safetensors when validation ran and its
// observers keep it (standard_validators(), as trainer_options installs: the lowest
// validation cross-entropy), else model.safetensors -- and translates and scores `test`.
// Phase lines go to `log` (may be nullptr); the trainer's own lines to plan.trainer.log.
// Errors: the trainer's (ConfigError, DivergenceError, IoError), the loader's, search's.
VariantOutcome run_variant(const VariantPlan& plan, const train::TrainingData& data,
                           const TestSet& test, const EvalSettings& settings, std::ostream* log);

// The evaluation half of run_variant for a model trained earlier (`qkv compare
// --reuse`): `trained` holds the training fields of that run (from its compare.json);
// the model in plan.trainer.model_dir is loaded, translated and scored as run_variant
// does. IoError / the loader's errors when the model is missing or damaged.
VariantOutcome evaluate_variant(const VariantPlan& plan, VariantResult trained,
                                const data::Vocab& vocab, const TestSet& test,
                                const EvalSettings& settings, std::ostream* log);

}  // namespace qkv::experiment
