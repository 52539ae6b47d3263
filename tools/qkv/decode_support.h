// What translate, score, eval and attend share besides decode::Translator and the stdin reader
// (data/stream_lines.h): loading a model directory with errors naming the flag, and the
// warning for a line that gets an empty output (the line-count invariant: a line that
// cannot be used still occupies its place in the output).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/data/stream_lines.h"
#include "qkv/decode/translator.h"
#include "qkv/models/config.h"

namespace qkv::tool {

// The longest input line (or side of a pair) translate, score, eval and attend accept.
constexpr int64_t kMaxLineBytes = int64_t{1} << 20;
// Their read-ahead (--mini-batch × --maxi-batch lines or pairs, up to 10^9 of up to 1 MiB
// each) is also capped in bytes, so a large input is never held whole. Each sentence
// decodes the same in any batch (beam_search's contract): the cap changes no output.
constexpr size_t kMaxChunkBytes = size_t{64} << 20;

// `path` when it is a model directory or file; else the IoError a user of the CLI should
// see, naming --model and how to get a model.
std::filesystem::path checked_model_path(const std::filesystem::path& path);
// decode::Translator::load(checked_model_path(path)).
decode::Translator load_translator(const std::filesystem::path& path);

// "qkv <command>: warning: line <n>: <what>; writing an empty line" on stderr.
void warn_line(std::string_view command, int64_t line, std::string_view what,
               std::string_view outcome = "writing an empty line");

}  // namespace qkv::tool
