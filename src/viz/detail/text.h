// Private: UTF-8, display widths, escaping and number formatting for the renderers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::viz::detail {

// Throws ValueError "<what> is not valid UTF-8 (byte N)" unless s is strict UTF-8 (no
// overlong forms, surrogates or code points above U+10FFFF).
void check_utf8(std::string_view s, std::string_view what);

// Terminal columns a code point takes: 0 for combining marks and zero-width characters,
// 2 for East Asian wide and fullwidth ones (CJK, Hangul, kana, fullwidth forms, most
// emoji), 1 otherwise; a small table in the spirit of wcwidth(), enough for the scripts
// MT corpora use.
int char_width(char32_t c);

// Display columns of valid UTF-8 `s`.
int display_width(std::string_view s);

// What a reader sees as one character: a code point with the zero-width ones after it.
struct Glyph {
  std::string text;  // UTF-8
  int width = 0;     // display columns
};
std::vector<Glyph> glyphs(std::string_view s);

// The longest prefix of `s` that fits `width` columns, ending in "…" when cut.
std::string truncate_to_width(std::string_view s, int width);

// & < > " ' as entities; control characters that XML 1.0 forbids become U+FFFD. Fit for
// XML/HTML text and attribute values alike.
std::string xml_escape(std::string_view s);

// printf("%.*f") in the C locale's format (always '.' as the decimal point).
std::string fixed(double value, int decimals);

}  // namespace qkv::viz::detail
