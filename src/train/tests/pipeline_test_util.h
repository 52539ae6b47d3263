// Helpers for the checkpoint and trainer tests: a per-test directory, a tiny synthetic
// translation task (word-by-word "translation" with reversed order) with its own
// SentencePiece vocabulary, tiny model configs, and typed-error checks.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "qkv/models/config.h"
#include "qkv/train/trainer.h"

namespace qkv::train::testing {

// A fresh directory under gtest's TempDir, named after the running test and the process.
std::filesystem::path test_dir();

// `pairs` source/target lines: 2..6 words from a 12-word source lexicon; the target is the
// word-by-word translation in reverse order. Deterministic in `seed`.
struct TinyCorpus {
  std::vector<std::string> source, target;
};
TinyCorpus tiny_corpus(int pairs, uint64_t seed);
void write_lines(const std::filesystem::path& path, const std::vector<std::string>& lines);

// Writes a tiny corpus (train: `train_pairs`, valid: 12 pairs), trains a vocabulary of
// `vocab_size` on it and returns everything a Trainer needs.
TrainingData tiny_task(const std::filesystem::path& dir, int train_pairs = 120,
                       int vocab_size = 40);

// Tiny models for `vocab_size` (dropout as given).
models::ModelConfig tiny_transformer(int64_t vocab_size, double dropout);
models::ModelConfig tiny_rnn(int64_t vocab_size, double dropout);

// Options for a quiet, small run in `dir`.
TrainerOptions tiny_options(const std::filesystem::path& dir, int64_t updates);

// The parameter arena as floats.
std::vector<float> parameter_values(const models::Seq2Seq& model);

// Success iff fn throws E whose message contains every fragment.
template <class E>
::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                       const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& f : fragments)
      if (what.find(f) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << f << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

}  // namespace qkv::train::testing
