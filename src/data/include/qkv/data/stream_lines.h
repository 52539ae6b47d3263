// Input that arrives line by line (stdin, a pipe, a stream in memory) read under the rules
// of corpus files (text_file.h), for the commands that answer each line in its place:
// translate, score, attend, eval.
//
// The line-count invariant starts here: a line that cannot be used is returned with its
// number and status instead of being dropped, so the caller can still give it its place
// in the output (an empty line) and say why (line_problem).
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "qkv/data/text_file.h"

namespace qkv::data {

// Reads lines from a stream as TextFileReader reads files: the line break, a trailing
// '\r' and a leading BOM are removed; a line over max_line_bytes is consumed but not kept
// (TooLong); a line with invalid UTF-8 or control characters is Invalid, with the problem
// described. Never throws for a line's content; IoError if the stream fails (for
// std::cin also a failed read(2), e.g. stdin is a directory) or starts with the gzip
// magic bytes (compressed data has no lines to keep in step with).
//
// std::cin is read through its file descriptor with read(2), which returns what a pipe
// holds instead of waiting for a full buffer: a line is had as soon as it arrives, and
// ready() says whether the next one can be had without waiting, so a caller batches what
// is there and answers a slow writer line by line.
class StreamLineReader {
 public:
  explicit StreamLineReader(std::istream& in, int64_t max_line_bytes = int64_t{1} << 20);
  // False at the end of the stream. Waits only for the line it returns.
  bool next(Line& line);
  // Whether next() would return without waiting for input: a whole line (or the end) is
  // buffered, after taking in what stdin holds without waiting. Always true for other
  // streams (in memory or files: they never wait).
  bool ready();
  int64_t max_line_bytes() const noexcept { return max_line_bytes_; }

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
std::optional<std::string> line_problem(const Line& line, int64_t max_line_bytes);

// One pair to score, from a `source ||| translation` line or from two files in lockstep:
// its line number and both sides, or why it cannot be used (problem).
struct LinePair {
  int64_t number = 0;
  std::string source, target;
  std::optional<std::string> problem;
};

// `source ||| translation` lines from a stream; the spaces and tabs around ||| belong to
// neither side. A line without the separator is a pair with a problem, counted, so the
// caller can refuse input that holds no pair at all (plain text piped in by mistake)
// instead of answering every line with an empty one.
class SeparatedPairReader {
 public:
  explicit SeparatedPairReader(std::istream& in, int64_t max_line_bytes = int64_t{1} << 20)
      : lines_(in, max_line_bytes) {}
  bool next(LinePair& pair);
  bool ready() { return lines_.ready(); }
  // Whether some line so far had the separator: until then the input may not be pairs.
  bool separator_seen() const noexcept { return separator_seen_; }
  int64_t lines_without_separator() const noexcept { return without_separator_; }

 private:
  StreamLineReader lines_;
  bool separator_seen_ = false;
  int64_t without_separator_ = 0;
};

// Two files read line by line in lockstep (invalid lines skipped as problems, never
// thrown). ValueError naming both files, and where the shorter one ends, when their line
// counts differ.
class ParallelLineReader {
 public:
  ParallelLineReader(const std::filesystem::path& source, const std::filesystem::path& target,
                     int64_t max_line_bytes = int64_t{1} << 20);
  bool next(LinePair& pair);
  bool ready() const noexcept { return true; }  // files never wait

 private:
  TextFileReader source_, target_;
  int64_t max_line_bytes_;
};

// The text bytes of an item read, for read_available's cap and a progress display: a
// line with its line break; a pair with its separator and line break.
inline size_t input_bytes(const Line& line) {
  return line.text.size() + 1;
}
inline size_t input_bytes(const LinePair& pair) {
  return pair.source.size() + pair.target.size() + 5;
}

// Replaces `batch` with what the input holds now: the next item (waiting for it), then
// those that are there without waiting (reader.ready()), up to max_items and about
// max_bytes (input_bytes). Returns the bytes read; 0 only at the end of the input. A
// caller answering batch by batch answers a slow writer (a pipe, a person) item by item
// instead of at the end of the input, and never holds a large input whole.
template <class Reader, class Item>
size_t read_available(Reader& reader, std::vector<Item>& batch, size_t max_items,
                      size_t max_bytes) {
  batch.clear();
  size_t bytes = 0;
  Item item;
  while (batch.size() < max_items && bytes < max_bytes && (batch.empty() || reader.ready()) &&
         reader.next(item)) {
    bytes += input_bytes(item);
    batch.push_back(std::move(item));
  }
  return bytes;
}

}  // namespace qkv::data
