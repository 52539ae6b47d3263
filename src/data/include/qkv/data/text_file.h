// Corpus files: one sentence per line, UTF-8, plain text or gzip.
//
// Every line is checked before anything else sees it, so a broken byte never reaches
// SentencePiece or a model: strict UTF-8 (no overlong forms, no surrogates, nothing
// above U+10FFFF, no truncated sequences) and no control characters except tab. A line
// that fails is an error naming FILE:LINE (InvalidLines::Error, the default) or is
// skipped and counted (InvalidLines::Skip, the CLI's --skip-invalid). Lines longer than
// a hard byte limit are always skipped and counted, and never buffered whole, so a
// binary file passed by mistake cannot exhaust memory. Nothing is dropped silently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::data {

// What to do with a line that is not valid UTF-8 or holds a control character.
enum class InvalidLines {
  Error,  // throw ValueError naming FILE:LINE and the byte (the default: fix the data)
  Skip,   // skip the line (the pair, for parallel corpora) and count it
};

struct TextReadOptions {
  InvalidLines invalid = InvalidLines::Error;
  // Lines with more bytes than this (without the line break) are skipped and counted.
  // Bounds the memory one line can take. Must be > 0.
  int64_t max_line_bytes = int64_t{1} << 20;
};

enum class LineStatus { Ok, Invalid, TooLong };

// One physical line of a file.
struct Line {
  // The text without '\n', a trailing '\r' (CRLF files) or the BOM (first line). Empty
  // unless status is Ok.
  std::string text;
  int64_t number = 0;  // 1-based line number in the file
  LineStatus status = LineStatus::Ok;
  // Invalid: what is wrong, e.g. "invalid UTF-8 at byte 5 (surrogate U+D800)".
  std::string problem;
};

// Why a line's bytes are unusable: the 1-based byte in the line and a description.
struct LineIssue {
  int64_t byte = 0;
  std::string what;  // "invalid UTF-8 at byte 5 (overlong encoding of U+002F)"
};

// The first problem in `line` (bytes without the line break), or nullopt when it is
// valid UTF-8 without control characters other than tab. Control characters are C0
// (U+0000..U+001F except tab), DEL (U+007F) and C1 (U+0080..U+009F). A line opening with
// a UTF-16 byte order mark (FF FE or FE FF) is named as such, with how to convert it.
// Exposed so text read from elsewhere (stdin) follows the same rules.
std::optional<LineIssue> find_line_issue(std::string_view line);

// Counts for one file. lines == kept + invalid + too_long.
struct TextFileStats {
  int64_t lines = 0;     // physical lines read
  int64_t kept = 0;      // returned as Ok
  int64_t invalid = 0;   // invalid UTF-8 or control characters (skipped under Skip)
  int64_t too_long = 0;  // over max_line_bytes (always skipped)
  bool gzip = false;     // the file was gzip-compressed
  // "FILE: 10 lines, 8 kept, 1 invalid, 1 over 1048576 bytes" (or "... is empty").
  std::string describe(const std::filesystem::path& path) const;
};

// Reads a file line by line. Plain text or gzip is decided by the gzip magic bytes
// (1f 8b), never by the extension. Not copyable (owns the open file).
class TextFileReader {
 public:
  // Throws IoError naming the file when it is missing, a directory or unreadable, and
  // ConfigError when options.max_line_bytes <= 0.
  explicit TextFileReader(std::filesystem::path path, TextReadOptions options = {});
  ~TextFileReader();
  TextFileReader(TextFileReader&&) noexcept;
  TextFileReader& operator=(TextFileReader&&) noexcept;

  // Reads the next physical line into `line` (Ok, Invalid or TooLong); false at the end
  // of the file. Under InvalidLines::Error an invalid line throws ValueError
  // ("FILE:LINE: invalid UTF-8 at byte K (...); fix the file or pass --skip-invalid").
  // A read error or a truncated/corrupt gzip stream throws IoError naming the file.
  bool next(Line& line);

  const std::filesystem::path& path() const noexcept;
  const TextFileStats& stats() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The message TextFileReader throws for an invalid line under InvalidLines::Error.
std::string invalid_line_message(const std::filesystem::path& path, const Line& line);

// A whole file's usable lines.
struct TextFile {
  std::vector<std::string> lines;
  std::vector<int64_t> line_numbers;  // 1-based, parallel to lines
  TextFileStats stats;
};

// Reads every line; Invalid/TooLong lines are left out and counted in stats (Invalid
// throws under InvalidLines::Error). Logs a warning for skipped lines and an empty file.
TextFile read_text_file(const std::filesystem::path& path, const TextReadOptions& options = {});

}  // namespace qkv::data
