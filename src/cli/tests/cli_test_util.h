// Shared helpers for the cli tests: expected errors, a scratch directory for YAML files
// (both from qkv_test_support) and an option set with one option of every kind.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/cli/budget.h"
#include "qkv/cli/options.h"
#include "qkv/testing/expect_error.h"
#include "qkv/testing/scratch_dir.h"

namespace qkv::cli::test_util {

// cli's errors are ConfigErrors unless a test names another type.
template <class E = ConfigError>
::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                       const std::vector<std::string>& parts) {
  return qkv::testing::throws_with<E>(fn, parts);
}

using TempDir = qkv::testing::ScratchDir;

// A subcommand's worth of options, one of every kind.
inline OptionSet train_like() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  OptionSet s;
  s.add_int("dim-emb", 512, "Size of the embedding vectors.").range(1, 65536);
  s.add_int("beam-size", 6, "Hypotheses kept per step.").range(1, 1000).alias('b');
  s.add_double("learn-rate", 3e-4, "Adam's step size.").range(0, kInf);
  s.add_double("label-smoothing", 0.1, "Probability mass spread over the vocabulary.").range(0, 1);
  s.add_int("shift", 0, "A signed offset.");
  s.add_string("name", "run", "A name for the logs.");
  s.add_path("model", std::nullopt, "The model file.").alias('m');
  s.add_path("output", "-", "Where to write; - is stdout.").alias('o');
  s.add_switch("resume", "Continue from the last checkpoint.");
  s.add_list("train-sets", {}, "Source and target training corpora.");
  s.add_list("valid-metrics", {"cross-entropy", "bleu"}, "Validation metrics.");
  s.add_enum("type", {"transformer", "s2s", "rnn"}, "transformer", "The model architecture.");
  s.add_validated("after", "0", budget_validator(), "When to stop training.");
  return s;
}

}  // namespace qkv::cli::test_util
