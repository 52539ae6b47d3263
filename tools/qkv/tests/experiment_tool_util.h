// The fixture of the compare / report / demo end-to-end tests: a temporary directory with
// a tiny synthetic parallel corpus and a runner for the built qkv program.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace qkv {

struct ToolResult {
  int code = -1;
  std::string out, err;
};

std::string read_text(const std::filesystem::path& path);
bool has(const std::string& text, const std::string& part);
// Lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);

// `qkv ARGS` in `dir` (arguments single-quoted), stdout and stderr captured.
ToolResult run_qkv(const std::filesystem::path& dir, const std::vector<std::string>& args);

// A fresh temporary directory named after `tag` with {train,valid,test}.{src,tgt}: short
// word sequences whose target is the source reversed word by word (300 / 20 / 30 pairs).
std::filesystem::path make_corpus_dir(const std::string& tag);

// The flags of a comparison on make_corpus_dir's corpus that finishes in seconds: tiny
// models, 30 updates each.
std::vector<std::string> tiny_compare_args(const std::string& out);

}  // namespace qkv
