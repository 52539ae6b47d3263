#include "detail/text.h"

#include "qkv/base/error.h"

namespace qkv::eval::detail {
namespace {

bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// Length of the valid sequence at s[i], or 0 when it is invalid (RFC 3629 table 3-7).
size_t valid_sequence_length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // 0x80..0xC1 (stray continuation, overlong 2-byte) and 0xF5..0xFF
  }
  if (i + n > s.size() || at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (!continuation(at(k))) return 0;
  return n;
}

char32_t decode(std::string_view s, size_t i, size_t n) {
  const auto at = [&](size_t k) { return char32_t(static_cast<unsigned char>(s[i + k])); };
  if (n == 1) return at(0);
  char32_t cp = at(0) & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (at(k) & 0x3F);
  return cp;
}

// CPython's _PyUnicode_IsWhitespace: bidirectional classes WS, B, S and category Zs.
bool is_python_space(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

void check_utf8(std::string_view s, std::string_view what) {
  const size_t bad = find_invalid_utf8(s);
  QKV_CHECK(bad == std::string_view::npos, ValueError, what, " is not valid UTF-8 (byte ", bad + 1,
            " of ", s.size(), "); re-encode the file as UTF-8");
}

bool is_space_at(std::string_view s, size_t i, size_t* len) {
  const size_t n = code_point_length(static_cast<unsigned char>(s[i]));
  *len = n;
  return is_python_space(decode(s, i, n));
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
