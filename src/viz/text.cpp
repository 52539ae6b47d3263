#include "detail/text.h"

#include <cmath>

#include "qkv/base/error.h"
#include "qkv/base/format.h"
#include "qkv/base/utf8.h"

namespace qkv::viz::detail {
namespace {

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
  const size_t bad = utf8::first_invalid(s);
  QKV_CHECK(bad == std::string_view::npos, ValueError, what, " is not valid UTF-8 (byte ", bad + 1,
            " of ", s.size(), "); pass UTF-8 text");
}

int char_width(char32_t c) {
  if (c < 0x300) return 1;
  if (in(kZeroWidth, std::size(kZeroWidth), c)) return 0;
  if (in(kWide, std::size(kWide), c)) return 2;
  return 1;
}

int display_width(std::string_view s) {
  int width = 0;
  for (char32_t c : utf8::decode(s)) width += char_width(c);
  return width;
}

std::vector<Glyph> glyphs(std::string_view s) {
  std::vector<Glyph> out;
  for (char32_t c : utf8::decode(s)) {
    const int w = char_width(c);
    if (w == 0 && !out.empty()) {
      utf8::append(out.back().text, c);  // a combining mark stays on its base character
      continue;
    }
    out.push_back({});
    utf8::append(out.back().text, c);
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
