// The PNG labels' bitmap font: every ASCII character has a glyph of its own, an accented
// letter is its base letter plus ink only where its accent goes, and a character the font
// lacks is drawn as a box rather than dropped.
#include "detail/bitmap_font.h"

#include <gtest/gtest.h>

#include <map>

namespace qkv::viz::detail {
namespace {

int ink(const GlyphBitmap& g) {
  int n = 0;
  for (const uint8_t row : g) n += __builtin_popcount(row);
  return n;
}

// The rows in which a and b differ.
std::vector<int> differing_rows(const GlyphBitmap& a, const GlyphBitmap& b) {
  std::vector<int> rows;
  for (int r = 0; r < kFontHeight; ++r)
    if (a[size_t(r)] != b[size_t(r)]) rows.push_back(r);
  return rows;
}

TEST(BitmapFont, EveryPrintableAsciiCharacterHasItsOwnGlyph) {
  std::map<GlyphBitmap, char> seen;
  for (char32_t c = 0x21; c < 0x7F; ++c) {
    ASSERT_TRUE(has_glyph(c)) << char(c);
    const GlyphBitmap g = glyph_bitmap(c);
    EXPECT_GT(ink(g), 0) << char(c);
    for (const uint8_t row : g) EXPECT_LT(row, 32) << char(c) << ": wider than 5 pixels";
    const auto [it, fresh] = seen.emplace(g, char(c));
    EXPECT_TRUE(fresh) << char(c) << " looks like " << it->second;
  }
  EXPECT_EQ(ink(glyph_bitmap(U' ')), 0);
}

TEST(BitmapFont, AccentedLettersAreTheirBaseWithTheAccentWhereItBelongs) {
  // A capital's accent goes in the two rows above it, a small letter's in the two rows
  // above its x-height, a cedilla or ogonek in the descender rows.
  struct Case {
    char32_t letter, base;
    std::vector<int> rows;
  };
  const Case cases[] = {{U'É', U'E', {0, 1}},  {U'Ü', U'U', {1}},     {U'é', U'e', {2, 3}},
                        {U'ü', U'u', {3}},     {U'ñ', U'n', {2, 3}},  {U'ç', U'c', {9, 10}},
                        {U'Ç', U'C', {9, 10}}, {U'ą', U'a', {9, 10}}, {U'Ž', U'Z', {0, 1}},
                        {U'ș', U's', {9, 10}}, {U'ő', U'o', {2, 3}},  {U'Å', U'A', {0, 1}}};
  for (const Case& c : cases) {
    ASSERT_TRUE(has_glyph(c.letter));
    EXPECT_EQ(differing_rows(glyph_bitmap(c.letter), glyph_bitmap(c.base)), c.rows)
        << "U+" << std::hex << uint32_t(c.letter);
  }
  // i's accents replace its dot: í is the dotless ı with an acute.
  EXPECT_EQ(differing_rows(glyph_bitmap(U'í'), glyph_bitmap(U'ı')), (std::vector<int>{2, 3}));
  EXPECT_NE(glyph_bitmap(U'í'), glyph_bitmap(U'i'));
  // Distinct accents on one letter give distinct glyphs.
  std::map<GlyphBitmap, char32_t> seen;
  for (const char32_t c : std::u32string_view(U"eèéêëēĕėęě"))
    EXPECT_TRUE(seen.emplace(glyph_bitmap(c), c).second) << "U+" << std::hex << uint32_t(c);
}

TEST(BitmapFont, MissingCharactersAreABoxAndZeroWidthOnesAreBlank) {
  EXPECT_FALSE(has_glyph(U'漢'));
  EXPECT_FALSE(has_glyph(U'Ω'));
  EXPECT_EQ(glyph_bitmap(U'漢'), glyph_bitmap(U'Ω'));
  EXPECT_GT(ink(glyph_bitmap(U'漢')), 0);
  EXPECT_NE(glyph_bitmap(U'漢'), glyph_bitmap(U'O'));
  EXPECT_EQ(ink(glyph_bitmap(U'\u0301')), 0);  // combining acute
  EXPECT_EQ(ink(glyph_bitmap(U'\u200B')), 0);  // zero-width space
  EXPECT_TRUE(has_glyph(U'▁'));                // SentencePiece's word mark
  EXPECT_TRUE(has_glyph(U'…'));                // cut labels end in it
}

}  // namespace
}  // namespace qkv::viz::detail
