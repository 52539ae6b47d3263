// What translate, score and attend share besides decode::Translator and the stdin reader
// (data/stream_lines.h): loading a model directory with errors naming the flag, and the
// warning for a line that gets an empty output (the line-count invariant: a line that
// cannot be used still occupies its place in the output).
#pragma once

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

// `path` when it is a model directory or file; else the IoError a user of the CLI should
// see, naming --model and how to get a model.
std::filesystem::path checked_model_path(const std::filesystem::path& path);
// decode::Translator::load(checked_model_path(path)).
decode::Translator load_translator(const std::filesystem::path& path);

// "qkv <command>: warning: line <n>: <what>; writing an empty line" on stderr.
void warn_line(std::string_view command, int64_t line, std::string_view what,
               std::string_view outcome = "writing an empty line");

}  // namespace qkv::tool
