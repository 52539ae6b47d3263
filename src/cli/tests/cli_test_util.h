// Shared helpers for the cli tests: expected errors and YAML files in a temporary dir.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/cli/budget.h"
#include "qkv/cli/options.h"

namespace qkv::cli::test_util {

// Runs `fn` and checks that it throws E whose message contains every one of `parts`.
template <class E = ConfigError>
::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                       const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& part : parts)
      if (what.find(part) == std::string::npos)
        return ::testing::AssertionFailure() << "'" << part << "' not in: " << what;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("qkv_cli_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to `name` inside the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

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
