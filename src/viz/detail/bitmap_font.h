// Private: a small bitmap font of our own for the labels of PNG heatmaps, so that a PNG
// needs no font library or font file (libpng only, as before) and renders the same on
// every machine, which the tests rely on.
//
// Each glyph is 5 pixels wide in a cell of kFontWidth × kFontHeight: two rows for the
// accents of capitals, the 7 rows of a capital (lower-case letters have an x-height of 5,
// so their accents fit in the two rows above it), and two rows for descenders. ASCII has
// a glyph each; accented Latin letters (Latin-1 and Latin Extended-A: German, French,
// Spanish, Czech, Polish, ...) are a base letter with an accent drawn on it; a few
// typographic marks have glyphs (curly quotes, dashes, «», €, …); anything else is an
// empty box, so a missing glyph is visible rather than silently dropped.
#pragma once

#include <array>
#include <cstdint>

namespace qkv::viz::detail {

constexpr int kFontWidth = 6;    // pixels per character, one of them spacing on the right
constexpr int kFontHeight = 11;  // pixels per line: 2 accent + 7 body + 2 descender rows

// One row per pixel row; bit 4 is the leftmost of the 5 columns, bit 0 the rightmost.
using GlyphBitmap = std::array<uint8_t, kFontHeight>;

// The bitmap of `c`; zero-width characters (combining marks, joiners) are blank.
GlyphBitmap glyph_bitmap(char32_t c);

// Whether the font has a glyph of its own for `c` (false: it is drawn as the box).
bool has_glyph(char32_t c);

}  // namespace qkv::viz::detail
