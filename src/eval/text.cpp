#include "detail/text.h"

#include "qkv/base/error.h"
#include "qkv/base/utf8.h"

namespace qkv::eval::detail {
namespace {

// CPython's _PyUnicode_IsWhitespace: bidirectional classes WS, B, S and category Zs.
bool is_python_space(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace

void check_utf8(std::string_view s, std::string_view what) {
  const size_t bad = utf8::first_invalid(s);
  QKV_CHECK(bad == std::string_view::npos, ValueError, what, " is not valid UTF-8 (byte ", bad + 1,
            " of ", s.size(), "); re-encode the file as UTF-8");
}

bool is_space_at(std::string_view s, size_t i, size_t* len) {
  const size_t n = code_point_length(static_cast<unsigned char>(s[i]));
  *len = n;
  return is_python_space(utf8::code_point_at(s, i, n));
}

std::vector<std::string_view> split_whitespace(std::string_view s) {
  std::vector<std::string_view> words;
  size_t start = std::string_view::npos;  // start of the current word, npos between words
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    const bool space = is_space_at(s, i, &n);
    if (space && start != std::string_view::npos) {
      words.push_back(s.substr(start, i - start));
      start = std::string_view::npos;
    } else if (!space && start == std::string_view::npos) {
      start = i;
    }
    i += n;
  }
  if (start != std::string_view::npos) words.push_back(s.substr(start));
  return words;
}

std::string_view rstrip_whitespace(std::string_view s) {
  size_t end = 0;  // one past the last non-space code point
  for (size_t i = 0; i < s.size();) {
    size_t n = 0;
    if (!is_space_at(s, i, &n)) end = i + n;
    i += n;
  }
  return s.substr(0, end);
}

std::string normalize_whitespace(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::string_view word : split_whitespace(s)) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

}  // namespace qkv::eval::detail
