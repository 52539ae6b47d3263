#include "decode_support.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "qkv/base/error.h"

namespace qkv::tool {

namespace fs = std::filesystem;

decode::Translator load_translator(const fs::path& path) {
  switch (models::model_path_kind(path)) {
    case models::ModelPathKind::DirectoryWithoutModel:
      QKV_THROW(IoError, "--model ", path.string(), ": no ", models::kModelFile,
                " in this directory; train one with `qkv train --model ", path.string(),
                "` or pass a model file");
    case models::ModelPathKind::Missing:
      QKV_THROW(IoError, "--model ", path.string(), ": no such model directory or file");
    case models::ModelPathKind::File:
    case models::ModelPathKind::Directory:
      break;
  }
  return decode::Translator::load(path);
}

LineReader::LineReader(std::istream& in, int64_t max_line_bytes)
    : in_(in), max_line_bytes_(max_line_bytes), buffer_(size_t{1} << 16) {}

bool LineReader::fill() {
  if (in_.eof()) return false;
  errno = 0;
  in_.read(buffer_.data(), std::streamsize(buffer_.size()));
  const int err = errno;
  QKV_CHECK(!in_.bad(), IoError, "reading the input (stdin) failed");
  // std::cin reads through C's stdin, which keeps a failed read (EISDIR when stdin is a
  // directory, EIO) in its error flag; the stream only sees an end of input.
  QKV_CHECK(&in_ != &std::cin || !std::ferror(stdin), IoError,
            "reading stdin failed: ", err != 0 ? std::strerror(err) : "read error",
            "; redirect a text file to it: qkv ... < FILE");
  begin_ = 0;
  end_ = size_t(in_.gcount());
  // Binary data would come out as one empty line per stray '\n'; name it instead.
  QKV_CHECK(!first_chunk_ || end_ < 2 || buffer_[0] != '\x1f' || buffer_[1] != '\x8b', IoError,
            "stdin is gzip-compressed data, not text; decompress it first, e.g. "
            "zcat FILE.gz | qkv ...");
  first_chunk_ = false;
  return end_ > 0;
}

bool LineReader::next(data::Line& line) {
  line = data::Line{};
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
    line.status = data::LineStatus::TooLong;
    return true;
  }
  if (line.number == 1 && line.text.starts_with("\xEF\xBB\xBF")) line.text.erase(0, 3);
  if (const auto issue = data::find_line_issue(line.text)) {
    line.text.clear();
    line.status = data::LineStatus::Invalid;
    line.problem = issue->what;
  }
  return true;
}

std::optional<std::string> line_problem(const data::Line& line, int64_t max_line_bytes) {
  switch (line.status) {
    case data::LineStatus::Invalid:
      return line.problem;
    case data::LineStatus::TooLong:
      return "longer than " + std::to_string(max_line_bytes) + " bytes";
    case data::LineStatus::Ok:
      break;
  }
  if (data::is_blank(line.text)) return std::string("empty line");
  return std::nullopt;
}

void warn_line(std::string_view command, int64_t line, std::string_view what,
               std::string_view outcome) {
  std::cerr << "qkv " << command << ": warning: line " << line << ": " << what << "; " << outcome
            << "\n";
}

int64_t max_source_tokens(const models::ModelConfig& config, int64_t max_length) {
  return std::min(max_length, models::max_sequence_tokens(config));
}

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
  return {buf, r.ptr};
}

}  // namespace qkv::tool
