#include "qkv/data/text_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "qkv/base/error.h"
#include "qkv/base/log.h"

namespace qkv::data {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 16;
constexpr std::string_view kBom = "\xEF\xBB\xBF";

}  // namespace

struct TextFileReader::Impl {
  std::filesystem::path path;
  TextReadOptions options;
  gzFile file = nullptr;
  std::vector<char> buffer = std::vector<char>(kChunkBytes);
  size_t pos = 0;
  size_t end = 0;
  bool eof = false;
  TextFileStats stats;

  ~Impl() {
    if (file != nullptr) gzclose_r(file);
  }

  // Loads the next chunk; false at the end of the data. zlib reads plain files
  // through unchanged ("transparent" mode), choosing by the gzip magic bytes.
  bool refill() {
    if (eof) return false;
    pos = 0;
    const int n = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()));
    int err = Z_OK;
    const char* msg = gzerror(file, &err);
    if (n < 0 || (err != Z_OK && err != Z_BUF_ERROR)) {
      const std::string why = err == Z_ERRNO ? std::strerror(errno) : std::string(msg);
      QKV_THROW(IoError, path.string(), ": read failed (", why,
                "); if it is a .gz file it is corrupt: re-download or re-compress it");
    }
    if (n == 0) {
      // Z_BUF_ERROR at the end: the gzip stream stopped before its trailer.
      QKV_CHECK(err != Z_BUF_ERROR, IoError, path.string(),
                ": gzip data ends early (truncated file?); re-download or re-compress it");
      eof = true;
      end = 0;
      return false;
    }
    end = static_cast<size_t>(n);
    stats.gzip = gzdirect(file) == 0;
    return true;
  }

  // Appends the physical line's bytes to `text` as long as they fit in `cap`; returns
  // false when the file has no more lines. Sets `overflow` when bytes were dropped.
  bool read_raw_line(std::string& text, size_t cap, bool& overflow) {
    bool any = false;
    while (pos < end || refill()) {
      any = true;
      const char* begin = buffer.data() + pos;
      const auto* nl = static_cast<const char*>(std::memchr(begin, '\n', end - pos));
      const size_t len = nl != nullptr ? static_cast<size_t>(nl - begin) : end - pos;
      if (!overflow && text.size() + len > cap) {
        overflow = true;
        text.clear();
      }
      if (!overflow) text.append(begin, len);
      pos += len + (nl != nullptr ? 1 : 0);
      if (nl != nullptr) break;
    }
    return any;
  }
};

std::string TextFileStats::describe(const std::filesystem::path& path) const {
  if (lines == 0) return path.string() + " is empty (0 lines)";
  std::string s =
      path.string() + ": " + std::to_string(lines) + " lines, " + std::to_string(kept) + " kept";
  if (invalid > 0) s += ", " + std::to_string(invalid) + " invalid (UTF-8 or control characters)";
  if (too_long > 0) s += ", " + std::to_string(too_long) + " too long";
  return s;
}

std::string invalid_line_message(const std::filesystem::path& path, const Line& line) {
  return path.string() + ":" + std::to_string(line.number) + ": " + line.problem +
         "; fix the file or pass --skip-invalid to skip such lines";
}

TextFileReader::TextFileReader(std::filesystem::path path, TextReadOptions options)
    : impl_(std::make_unique<Impl>()) {
  QKV_CHECK(options.max_line_bytes > 0, ConfigError, "max line bytes must be > 0, got ",
            options.max_line_bytes);
  impl_->path = std::move(path);
  impl_->options = options;
  const std::string name = impl_->path.string();
  std::error_code ec;
  QKV_CHECK(!std::filesystem::is_directory(impl_->path, ec), IoError, name,
            " is a directory; expected a text file with one sentence per line");
  errno = 0;
  impl_->file = gzopen(name.c_str(), "rb");
  if (impl_->file == nullptr) {
    const std::string why = errno != 0 ? std::strerror(errno) : "out of memory";
    QKV_THROW(IoError, "cannot open ", name, ": ", why);
  }
  gzbuffer(impl_->file, static_cast<unsigned>(kChunkBytes));
}

TextFileReader::~TextFileReader() = default;
TextFileReader::TextFileReader(TextFileReader&&) noexcept = default;
TextFileReader& TextFileReader::operator=(TextFileReader&&) noexcept = default;

const std::filesystem::path& TextFileReader::path() const noexcept {
  return impl_->path;
}
const TextFileStats& TextFileReader::stats() const noexcept {
  return impl_->stats;
}

bool TextFileReader::next(Line& line) {
  Impl& s = *impl_;
  line.text.clear();
  line.problem.clear();
  line.status = LineStatus::Ok;
  const auto max = static_cast<size_t>(s.options.max_line_bytes);
  // Room for a BOM and a '\r' that are removed below, so they do not count.
  const size_t cap = max + (s.stats.lines == 0 ? kBom.size() : 0) + 1;
  bool overflow = false;
  if (!s.read_raw_line(line.text, cap, overflow)) return false;
  line.number = ++s.stats.lines;
  if (!overflow) {
    if (line.number == 1 && line.text.starts_with(kBom)) line.text.erase(0, kBom.size());
    if (line.text.ends_with('\r')) line.text.pop_back();
    overflow = line.text.size() > max;
  }
  if (overflow) {
    line.text.clear();
    line.status = LineStatus::TooLong;
    ++s.stats.too_long;
    return true;
  }
  if (std::optional<LineIssue> issue = find_line_issue(line.text)) {
    line.text.clear();
    line.status = LineStatus::Invalid;
    line.problem = std::move(issue->what);
    ++s.stats.invalid;
    if (s.options.invalid == InvalidLines::Error)
      QKV_THROW(ValueError, invalid_line_message(s.path, line));
    return true;
  }
  ++s.stats.kept;
  return true;
}

TextFile read_text_file(const std::filesystem::path& path, const TextReadOptions& options) {
  TextFileReader reader(path, options);
  TextFile out;
  Line line;
  while (reader.next(line)) {
    if (line.status != LineStatus::Ok) continue;
    out.lines.push_back(std::move(line.text));
    out.line_numbers.push_back(line.number);
  }
  out.stats = reader.stats();
  if (out.stats.kept != out.stats.lines || out.stats.lines == 0)
    log(LogLevel::Warning, out.stats.describe(path));
  return out;
}

}  // namespace qkv::data
