// What translate, score and attend share besides decode::Translator: loading a model
// directory with errors naming the flag, reading stdin line by line under the corpus rules
// (strict UTF-8, a byte limit) and checking a line.
//
// The line-count invariant lives here: a line that cannot be used is reported with its
// number and still occupies its place in the output (the command writes an empty line).
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/data/text_file.h"
#include "qkv/decode/translator.h"
#include "qkv/models/config.h"

namespace qkv::tool {

// decode::Translator::load with the errors a user of the CLI should see: a path that is
// no model directory or file is an IoError naming --model.
decode::Translator load_translator(const std::filesystem::path& path);

// Reads lines from a stream (stdin) as data::TextFileReader reads files: the line break,
// a trailing '\r' and a leading BOM are removed; a line over max_line_bytes is consumed
// but not kept (TooLong); a line with invalid UTF-8 or control characters is Invalid,
// with the problem described. Never throws for a line's content; IoError if the stream
// fails (for std::cin also a failed read(2), e.g. stdin is a directory) or
// starts with the gzip magic bytes (compressed data has no lines to keep in step with).
//
// std::cin is read through its file descriptor with read(2), which returns what a pipe
// holds instead of waiting for a full buffer: a line is had as soon as it arrives, and
// ready() says whether the next one can be had without waiting, so a command batches what
// is there and answers a slow writer line by line (streaming, issue 18).
class LineReader {
 public:
  explicit LineReader(std::istream& in, int64_t max_line_bytes = int64_t{1} << 20);
  // False at the end of the stream. Waits only for the line it returns.
  bool next(data::Line& line);
  // Whether next() would return without waiting for input: a whole line (or the end) is
  // buffered, after taking in what stdin holds without waiting. Always true for other
  // streams (in memory or files: they never wait).
  bool ready();

 private:
  bool fill();
  // Moves the unread bytes to the front and reads more after them; false if the buffer
  // is full (nothing read).
  bool append_some();
  size_t read_some(char* into, size_t size);

  std::istream& in_;
  bool from_stdin_;
  bool at_end_ = false;
  int64_t max_line_bytes_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  int64_t number_ = 0;
  bool first_chunk_ = true;
};

// Why a line gives an empty output, as a warning names it: "invalid UTF-8 at byte 3
// (...)", "longer than 1048576 bytes", "empty line". nullopt for an Ok, non-blank line.
std::optional<std::string> line_problem(const data::Line& line, int64_t max_line_bytes);

// "qkv <command>: warning: line <n>: <what>; writing an empty line" on stderr.
void warn_line(std::string_view command, int64_t line, std::string_view what,
               std::string_view outcome = "writing an empty line");

// The most source tokens (without EOS) a line may have: --max-length, and for a
// Transformer what its position table covers (the source EOS takes one position).
int64_t max_source_tokens(const models::ModelConfig& config, int64_t max_length);

// "-1.234567" with `decimals` digits (printf %.*f: fixed, locale-independent).
std::string fixed(double value, int decimals = 6);

}  // namespace qkv::tool
