// Helpers for the checkpoint and trainer tests: a tiny synthetic translation task
// (word-by-word "translation" with reversed order) with its own SentencePiece vocabulary,
// tiny model configs; the per-test directory and typed-error checks of qkv_test_support.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "qkv/models/config.h"
#include "qkv/testing/expect_error.h"
#include "qkv/testing/files.h"
#include "qkv/testing/scratch_dir.h"
#include "qkv/testing/tiny_corpus.h"
#include "qkv/train/trainer.h"

namespace qkv::train::testing {

using qkv::testing::test_dir;
using qkv::testing::throws_with;
using qkv::testing::write_lines;

using qkv::testing::TinyCorpus;
// qkv_test_support's tiny task with 2..6 words from the 12-word lexicon, as the trainer
// tests' expected results were written for. Deterministic in `seed`.
TinyCorpus tiny_corpus(int pairs, uint64_t seed);

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

}  // namespace qkv::train::testing
