// The fixture of the decoding commands' end-to-end tests: a temporary directory with a
// SentencePiece vocabulary trained there, tiny random models saved through the checkpoint
// API, and a runner for the built qkv program.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "qkv/models/config.h"

namespace qkv {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& path);
// The lines of `text` without their '\n'.
std::vector<std::string> lines_of(const std::string& text);
// `text` cut at every `sep` (n separators: n + 1 parts).
std::vector<std::string> split(const std::string& text, const std::string& sep);
bool contains(const std::string& text, const std::string& part);
// Whitespace-separated words.
size_t words_in(const std::string& text);

inline constexpr int32_t kVocabSize = 48;

class DecodeToolTest : public ::testing::Test {
 protected:
  // A fresh directory with vocab.spm (kVocabSize pieces) trained on a few English/German
  // lines.
  void SetUp() override;
  void TearDown() override;

  // A model directory `name` with a random model of `type` and `attention`.
  void make_model_dir(const std::string& name, models::ModelType type,
                      models::AttentionKind attention);
  // `qkv ARGS < stdin_file` in the test directory. Arguments are single-quoted.
  Result qkv(const std::vector<std::string>& args, const std::string& stdin_file = "/dev/null");
  void write(const std::string& name, const std::string& text);

  std::filesystem::path dir_;
};

}  // namespace qkv
