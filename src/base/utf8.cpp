// Strict UTF-8 (base/utf8.h).
#include "qkv/base/utf8.h"

namespace qkv::utf8 {

size_t sequence_length(std::string_view s, size_t i) noexcept {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = at(0);
  if (lead < 0x80) return 1;
  // The length and the allowed range of the second byte: its bounds rule out overlong
  // forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() - i < n || at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((at(k) & 0xC0) != 0x80) return 0;
  return n;
}

size_t first_invalid(std::string_view s) noexcept {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

char32_t code_point_at(std::string_view s, size_t i, size_t length) noexcept {
  const auto at = [&](size_t k) { return char32_t(static_cast<unsigned char>(s[i + k])); };
  if (length == 1) return at(0);
  char32_t c = at(0) & (0xFFu >> (length + 1));
  for (size_t k = 1; k < length; ++k) c = (c << 6) | (at(k) & 0x3Fu);
  return c;
}

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    if (n == 0) {
      out += U'\uFFFD';
      ++i;
      continue;
    }
    out += code_point_at(s, i, n);
    i += n;
  }
  return out;
}

void append(std::string& out, char32_t c) {
  if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) c = 0xFFFD;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace qkv::utf8
