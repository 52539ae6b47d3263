#include "detail/text.h"

#include <cmath>

#include "qkv/base/error.h"
#include "qkv/base/format.h"

namespace qkv::viz::detail {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid (RFC 3629).
size_t sequence_length(std::string_view s, size_t i) {
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
    return 0;
  }
  if (i + n > s.size() || at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((at(k) & 0xC0) != 0x80) return 0;
  return n;
}

struct Range {
  char32_t first, last;
};

bool in(const Range* ranges, size_t n, char32_t c) {
  for (size_t i = 0; i < n; ++i)
    if (c >= ranges[i].first && c <= ranges[i].last) return true;
  return false;
}

// Combining marks (Mn of the common scripts) and zero-width format characters.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A},
    {0x064B, 0x065F}, {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E},
    {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x200B, 0x200F}, {0x2060, 0x2064},
    {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}};

// East Asian Wide (W) and Fullwidth (F) blocks.
constexpr Range kWide[] = {{0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},
                           {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
                           {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},
                           {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
                           {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};

}  // namespace

void check_utf8(std::string_view s, std::string_view what) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    QKV_CHECK(n != 0, ValueError, what, " is not valid UTF-8 (byte ", i + 1, " of ", s.size(),
              "); pass UTF-8 text");
    i += n;
  }
}

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t c = n == 1 ? lead : lead & (0xFF >> (n + 1));
    for (size_t k = 1; k < n && i + k < s.size(); ++k)
      c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out += c;
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
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

int char_width(char32_t c) {
  if (c < 0x300) return 1;
  if (in(kZeroWidth, std::size(kZeroWidth), c)) return 0;
  if (in(kWide, std::size(kWide), c)) return 2;
  return 1;
}

int display_width(std::string_view s) {
  int width = 0;
  for (char32_t c : decode_utf8(s)) width += char_width(c);
  return width;
}

std::vector<Glyph> glyphs(std::string_view s) {
  std::vector<Glyph> out;
  for (char32_t c : decode_utf8(s)) {
    const int w = char_width(c);
    if (w == 0 && !out.empty()) {
      append_utf8(out.back().text, c);  // a combining mark stays on its base character
      continue;
    }
    out.push_back({});
    append_utf8(out.back().text, c);
    out.back().width = w;
  }
  return out;
}

std::string truncate_to_width(std::string_view s, int width) {
  if (display_width(s) <= width) return std::string(s);
  std::string out;
  int used = 0;
  for (const Glyph& g : glyphs(s)) {
    if (used + g.width > width - 1) break;  // keep one column for the ellipsis
    out += g.text;
    used += g.width;
  }
  return out + "\u2026";
}

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += "\uFFFD";
        else
          out += ch;
    }
  }
  return out;
}

std::string fixed(double value, int decimals) {
  std::string out = format_fixed(value, decimals);
  if (out.front() == '-' && out.find_first_not_of("-0.") == std::string::npos)
    out.erase(0, 1);  // no "-0.00" in a coordinate or a label
  return out;
}

}  // namespace qkv::viz::detail
