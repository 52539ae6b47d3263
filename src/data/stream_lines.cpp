#include "qkv/data/stream_lines.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "qkv/base/error.h"
#include "qkv/base/format.h"
#include "qkv/data/parallel_corpus.h"

namespace qkv::data {

StreamLineReader::StreamLineReader(std::istream& in, int64_t max_line_bytes)
    : in_(in),
      from_stdin_(&in == &std::cin),
      max_line_bytes_(max_line_bytes),
      buffer_(size_t{1} << 16) {
  QKV_CHECK(max_line_bytes > 0, ConfigError, "max_line_bytes must be > 0, got ", max_line_bytes);
}

// Up to `size` bytes into `into`, 0 at the end. stdin: one read(2) of fd 0, which returns
// what a pipe holds; std::cin's istream::read would wait until 64 KiB or the end arrived.
size_t StreamLineReader::read_some(char* into, size_t size) {
  if (!from_stdin_) {
    in_.read(into, std::streamsize(size));
    QKV_CHECK(!in_.bad(), IoError, "reading the input (stdin) failed");
    return size_t(in_.gcount());
  }
  ssize_t n = 0;
  do n = ::read(STDIN_FILENO, into, size);
  while (n < 0 && errno == EINTR);
  // EISDIR when stdin is a directory, EIO: an error, not an empty input.
  QKV_CHECK(n >= 0, IoError, "reading stdin failed: ", std::strerror(errno),
            "; redirect a text file to it: qkv ... < FILE");
  return size_t(n);
}

bool StreamLineReader::fill() {
  if (at_end_) return false;
  begin_ = 0;
  end_ = read_some(buffer_.data(), buffer_.size());
  at_end_ = end_ == 0;
  // Binary data would come out as one empty line per stray '\n'; name it instead.
  QKV_CHECK(!first_chunk_ || end_ < 2 || buffer_[0] != '\x1f' || buffer_[1] != '\x8b', IoError,
            "stdin is gzip-compressed data, not text; decompress it first, e.g. "
            "zcat FILE.gz | qkv ...");
  first_chunk_ = false;
  return end_ > 0;
}

bool StreamLineReader::append_some() {
  std::copy(buffer_.begin() + ptrdiff_t(begin_), buffer_.begin() + ptrdiff_t(end_),
            buffer_.begin());
  end_ -= begin_;
  begin_ = 0;
  if (end_ == buffer_.size()) return false;
  const size_t n = read_some(buffer_.data() + end_, buffer_.size() - end_);
  at_end_ = n == 0;
  end_ += n;
  return true;
}

bool StreamLineReader::ready() {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    if (at_end_ || !from_stdin_ || std::find(start, stop, '\n') != stop) return true;
    // POLLIN, POLLHUP (the writer closed: read returns 0) or POLLERR: read(2) won't wait.
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    if (::poll(&fd, 1, 0) <= 0) return false;
    // Take in what arrived: if it is half a line, the lines before it are answered now
    // rather than after the writer finishes that line. A full buffer without a line break
    // is a line longer than 64 KiB: next() reads it on (such lines are not typed by hand).
    if (!append_some()) return true;
  }
}

bool StreamLineReader::next(Line& line) {
  line = Line{};
  bool any = false, too_long = false;
  for (;;) {
    if (begin_ == end_ && !fill()) break;
    any = true;
    const char* start = buffer_.data() + begin_;
    const char* stop = buffer_.data() + end_;
    const char* nl = std::find(start, stop, '\n');
    const auto take = size_t(nl - start);
    if (!too_long) {
      if (int64_t(line.text.size() + take) > max_line_bytes_ + 1) {  // +1: a '\r' to strip
        too_long = true;
        line.text.clear();
      } else {
        line.text.append(start, take);
      }
    }
    begin_ += take + (nl != stop ? 1 : 0);
    if (nl != stop) break;
  }
  if (!any) return false;
  line.number = ++number_;
  if (!too_long && !line.text.empty() && line.text.back() == '\r') line.text.pop_back();
  if (!too_long && int64_t(line.text.size()) > max_line_bytes_) too_long = true;
  if (too_long) {
    line.text.clear();
    line.status = LineStatus::TooLong;
    return true;
  }
  if (line.number == 1 && line.text.starts_with("\xEF\xBB\xBF")) line.text.erase(0, 3);
  if (const auto issue = find_line_issue(line.text)) {
    line.text.clear();
    line.status = LineStatus::Invalid;
    line.problem = issue->what;
  }
  return true;
}

std::optional<std::string> line_problem(const Line& line, int64_t max_line_bytes) {
  switch (line.status) {
    case LineStatus::Invalid:
      return line.problem;
    case LineStatus::TooLong:
      return "longer than " + std::to_string(max_line_bytes) + " bytes";
    case LineStatus::Ok:
      break;
  }
  if (is_blank(line.text)) return std::string("empty line");
  return std::nullopt;
}

bool SeparatedPairReader::next(LinePair& pair) {
  Line line;
  if (!lines_.next(line)) return false;
  pair = LinePair{line.number, {}, {}, std::nullopt};
  // Unreadable or blank: said as such (an empty line is no evidence of a wrong format).
  if (line.status != LineStatus::Ok || is_blank(line.text)) {
    pair.problem = line_problem(line, lines_.max_line_bytes());
    return true;
  }
  const size_t bar = line.text.find("|||");
  if (bar == std::string::npos) {
    pair.problem = "no ' ||| ' between the source and the translation";
    ++without_separator_;
    return true;
  }
  separator_seen_ = true;
  pair.source = trim_blanks(std::string_view(line.text).substr(0, bar));
  pair.target = trim_blanks(std::string_view(line.text).substr(bar + 3));
  return true;
}

ParallelLineReader::ParallelLineReader(const std::filesystem::path& source,
                                       const std::filesystem::path& target, int64_t max_line_bytes)
    : source_(source, {.invalid = InvalidLines::Skip, .max_line_bytes = max_line_bytes}),
      target_(target, {.invalid = InvalidLines::Skip, .max_line_bytes = max_line_bytes}),
      max_line_bytes_(max_line_bytes) {}

bool ParallelLineReader::next(LinePair& pair) {
  Line s, t;
  const bool has_s = source_.next(s), has_t = target_.next(t);
  // A reader at its end leaves its Line untouched: its stats hold the line count.
  const TextFileReader& shorter = has_s ? target_ : source_;
  const TextFileReader& longer = has_s ? source_ : target_;
  QKV_CHECK(has_s == has_t, ValueError, source_.path().string(), " and ", target_.path().string(),
            " differ in length: ", shorter.path().string(), " ends after ", shorter.stats().lines,
            " lines, ", longer.path().string(),
            " goes on; give one translation per source line, aligned line by line");
  if (!has_s) return false;
  pair = LinePair{s.number, s.text, t.text, std::nullopt};
  if (s.status != LineStatus::Ok)
    pair.problem = source_.path().string() + ": " + *line_problem(s, max_line_bytes_);
  else if (t.status != LineStatus::Ok)
    pair.problem = target_.path().string() + ": " + *line_problem(t, max_line_bytes_);
  return true;
}

}  // namespace qkv::data
