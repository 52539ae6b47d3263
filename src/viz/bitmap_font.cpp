// The PNG labels' bitmap font (detail/bitmap_font.h). The glyphs were drawn for qkv on a
// 5 × 9 grid: rows are separated by '/', '#' is ink, '.' paper; the first row is the top
// of a capital, row 7 the baseline, rows 8 and 9 descenders.
#include "detail/bitmap_font.h"

#include <span>
#include <string_view>
#include <unordered_map>

namespace qkv::viz::detail {
namespace {

constexpr int kAccentRows = 2;  // above a capital

struct GlyphSource {
  char32_t c;
  std::string_view rows;
};

// clang-format off
constexpr GlyphSource kGlyphs[] = {
    {U' ', ""},
    {U'!', "..#../..#../..#../..#../..#../...../..#.."},
    {U'"', ".#.#./.#.#."},
    {U'#', ".#.#./.#.#./#####/.#.#./#####/.#.#./.#.#."},
    {U'$', "..#../.####/#.#../.###./..#.#/####./..#.."},
    {U'%', "##.../##..#/...#./..#../.#.../#..##/...##"},
    {U'&', ".##../#..#./#.#../.#.../#.#.#/#..#./.##.#"},
    {U'\'', "..#../..#.."},
    {U'(', "...#./..#../.#.../.#.../.#.../..#../...#."},
    {U')', ".#.../..#../...#./...#./...#./..#../.#..."},
    {U'*', "...../..#../#.#.#/.###./#.#.#/..#../....."},
    {U'+', "...../..#../..#../#####/..#../..#../....."},
    {U',', "...../...../...../...../...../..#../..#../.#..."},
    {U'-', "...../...../...../.###."},
    {U'.', "...../...../...../...../...../...../..#.."},
    {U'/', "....#/....#/...#./..#../.#.../#..../#...."},
    {U'0', ".###./#...#/#..##/#.#.#/##..#/#...#/.###."},
    {U'1', "..#../.##../..#../..#../..#../..#../.###."},
    {U'2', ".###./#...#/....#/...#./..#../.#.../#####"},
    {U'3', "#####/...#./..#../...#./....#/#...#/.###."},
    {U'4', "...#./..##./.#.#./#..#./#####/...#./...#."},
    {U'5', "#####/#..../####./....#/....#/#...#/.###."},
    {U'6', "..##./.#.../#..../####./#...#/#...#/.###."},
    {U'7', "#####/....#/...#./..#../.#.../.#.../.#..."},
    {U'8', ".###./#...#/#...#/.###./#...#/#...#/.###."},
    {U'9', ".###./#...#/#...#/.####/....#/...#./.##.."},
    {U':', "...../..#../...../...../...../..#../....."},
    {U';', "...../..#../...../...../...../..#../..#../.#..."},
    {U'<', "...#./..#../.#.../#..../.#.../..#../...#."},
    {U'=', "...../...../#####/...../#####"},
    {U'>', ".#.../..#../...#./....#/...#./..#../.#..."},
    {U'?', ".###./#...#/....#/...#./..#../...../..#.."},
    {U'@', ".###./#...#/#.###/#.#.#/#.###/#..../.####"},
    {U'A', ".###./#...#/#...#/#####/#...#/#...#/#...#"},
    {U'B', "####./#...#/#...#/####./#...#/#...#/####."},
    {U'C', ".###./#...#/#..../#..../#..../#...#/.###."},
    {U'D', "####./#...#/#...#/#...#/#...#/#...#/####."},
    {U'E', "#####/#..../#..../####./#..../#..../#####"},
    {U'F', "#####/#..../#..../####./#..../#..../#...."},
    {U'G', ".###./#...#/#..../#.###/#...#/#...#/.####"},
    {U'H', "#...#/#...#/#...#/#####/#...#/#...#/#...#"},
    {U'I', ".###./..#../..#../..#../..#../..#../.###."},
    {U'J', "..###/...#./...#./...#./...#./#..#./.##.."},
    {U'K', "#...#/#..#./#.#../##.../#.#../#..#./#...#"},
    {U'L', "#..../#..../#..../#..../#..../#..../#####"},
    {U'M', "#...#/##.##/#.#.#/#.#.#/#...#/#...#/#...#"},
    {U'N', "#...#/#...#/##..#/#.#.#/#..##/#...#/#...#"},
    {U'O', ".###./#...#/#...#/#...#/#...#/#...#/.###."},
    {U'P', "####./#...#/#...#/####./#..../#..../#...."},
    {U'Q', ".###./#...#/#...#/#...#/#.#.#/#..#./.##.#"},
    {U'R', "####./#...#/#...#/####./#.#../#..#./#...#"},
    {U'S', ".####/#..../#..../.###./....#/....#/####."},
    {U'T', "#####/..#../..#../..#../..#../..#../..#.."},
    {U'U', "#...#/#...#/#...#/#...#/#...#/#...#/.###."},
    {U'V', "#...#/#...#/#...#/#...#/#...#/.#.#./..#.."},
    {U'W', "#...#/#...#/#...#/#.#.#/#.#.#/#.#.#/.#.#."},
    {U'X', "#...#/#...#/.#.#./..#../.#.#./#...#/#...#"},
    {U'Y', "#...#/#...#/.#.#./..#../..#../..#../..#.."},
    {U'Z', "#####/....#/...#./..#../.#.../#..../#####"},
    {U'[', ".###./.#.../.#.../.#.../.#.../.#.../.###."},
    {U'\\', "#..../#..../.#.../..#../...#./....#/....#"},
    {U']', ".###./...#./...#./...#./...#./...#./.###."},
    {U'^', "..#../.#.#./#...#"},
    {U'_', "...../...../...../...../...../...../#####"},
    {U'`', ".#.../..#.."},
    {U'a', "...../...../.###./....#/.####/#...#/.####"},
    {U'b', "#..../#..../#.##./##..#/#...#/#...#/####."},
    {U'c', "...../...../.###./#..../#..../#...#/.###."},
    {U'd', "....#/....#/.##.#/#..##/#...#/#...#/.####"},
    {U'e', "...../...../.###./#...#/#####/#..../.###."},
    {U'f', "..##./.#..#/.#.../###../.#.../.#.../.#..."},
    {U'g', "...../...../.####/#...#/#...#/#...#/.####/....#/.###."},
    {U'h', "#..../#..../#.##./##..#/#...#/#...#/#...#"},
    {U'i', "..#../...../.##../..#../..#../..#../.###."},
    {U'j', "...#./...../..##./...#./...#./...#./...#./#..#./.##.."},
    {U'k', "#..../#..../#..#./#.#../##.../#.#../#..#."},
    {U'l', ".##../..#../..#../..#../..#../..#../.###."},
    {U'm', "...../...../##.#./#.#.#/#.#.#/#.#.#/#.#.#"},
    {U'n', "...../...../#.##./##..#/#...#/#...#/#...#"},
    {U'o', "...../...../.###./#...#/#...#/#...#/.###."},
    {U'p', "...../...../####./#...#/#...#/#...#/####./#..../#...."},
    {U'q', "...../...../.####/#...#/#...#/#...#/.####/....#/....#"},
    {U'r', "...../...../#.##./##..#/#..../#..../#...."},
    {U's', "...../...../.####/#..../.###./....#/####."},
    {U't', ".#.../.#.../###../.#.../.#.../.#..#/..##."},
    {U'u', "...../...../#...#/#...#/#...#/#..##/.##.#"},
    {U'v', "...../...../#...#/#...#/#...#/.#.#./..#.."},
    {U'w', "...../...../#...#/#...#/#.#.#/#.#.#/.#.#."},
    {U'x', "...../...../#...#/.#.#./..#../.#.#./#...#"},
    {U'y', "...../...../#...#/#...#/#...#/#...#/.####/....#/.###."},
    {U'z', "...../...../#####/...#./..#../.#.../#####"},
    {U'{', "...#./..#../..#../.#.../..#../..#../...#."},
    {U'|', "..#../..#../..#../..#../..#../..#../..#../..#.."},
    {U'}', ".#.../..#../..#../...#./..#../..#../.#..."},
    {U'~', "...../...../.#.../#.#.#/...#."},
    // Letters and marks that are not an ASCII letter with an accent.
    {U'ß', ".##../#..#./#..#./#.#../#..#./#..#./#.##./#...."},
    {U'æ', "...../...../##.#./..#.#/.####/#.#../.##.#"},
    {U'Æ', ".####/#.#../#.#../#####/#.#../#.#../#.###"},
    {U'œ', "...../...../.#.#./#.#.#/#.###/#.#../.#.##"},
    {U'Œ', ".####/#.#../#.#../#.###/#.#../#.#../.####"},
    {U'ø', "...../....#/.###./#..##/#.#.#/##..#/.###./#...."},
    {U'Ø', ".####/#..##/#.#.#/#.#.#/#.#.#/##..#/####."},
    {U'ð', ".#.#./..#../.#.#./....#/.####/#...#/.###."},
    {U'Ð', "####./.#..#/.#..#/###.#/.#..#/.#..#/####."},
    {U'þ', "#..../#..../####./#...#/#...#/#...#/####./#..../#...."},
    {U'Þ', "#..../####./#...#/#...#/####./#..../#...."},
    {U'ı', "...../...../.##../..#../..#../..#../.###."},  // dotless i, the base of ì í î ï
    {U'ł', ".##../..#../..#.#/..##./.##../..#../.###."},
    {U'Ł', ".#.../.#.../.#.#./.##../##.../.#.../.####"},
    {U'đ', "...#./..###/.##.#/#..##/#...#/#...#/.####"},
    {U'¡', "..#../...../..#../..#../..#../..#../..#.."},
    {U'¿', "..#../...../..#../.#.../#..../#...#/.###."},
    {U'«', "...../...../..#.#/.#.#./#.#../.#.#./..#.#"},
    {U'»', "...../...../#.#../.#.#./..#.#/.#.#./#.#.."},
    {U'°', ".##../#..#./.##.."},
    {U'×', "...../#...#/.#.#./..#../.#.#./#...#"},
    {U'÷', "...../..#../...../#####/...../..#.."},
    {U'·', "...../...../...../..#.."},
    {U'§', ".###./#..../.##../#..#./.##../...#./###.."},
    {U'€', "..###/.#.../####./.#.../####./.#.../..###"},
    {U'£', "..##./.#..#/.#.../###../.#.../.#.../#####"},
    {U'‘', "..#../.#..."},
    {U'’', "..#../..#../.#..."},
    {U'‚', "...../...../...../...../...../..#../..#../.#..."},
    {U'“', ".#.#./#.#.."},
    {U'”', ".#.#./.#.#./#.#.."},
    {U'„', "...../...../...../...../...../.#.#./.#.#./#.#.."},
    {U'–', "...../...../...../#####"},
    {U'—', "...../...../...../#####"},
    {U'…', "...../...../...../...../...../...../#.#.#"},
    {U'▁', "...../...../...../...../...../...../...../#####"},  // SentencePiece's word mark
    {U'⁇', "##.##/..#.#/.#.#./.#.#./...../.#.#."},              // what <unk> decodes to
};
// clang-format on

enum class Accent {
  Grave,
  Acute,
  Circumflex,
  Tilde,
  Diaeresis,
  Ring,
  Cedilla,
  Caron,
  Macron,
  Breve,
  Ogonek,
  DotAbove,
  DoubleAcute,
  CommaBelow
};

// Two rows drawn above the letter (or, for the marks below it, in the descender rows).
constexpr uint8_t kAccentBits[][2] = {
    {0b01000, 0b00100},  // grave
    {0b00010, 0b00100},  // acute
    {0b00100, 0b01010},  // circumflex
    {0b01101, 0b10110},  // tilde
    {0b00000, 0b01010},  // diaeresis
    {0b00100, 0b01010},  // ring (its lower half is the letter's top)
    {0b00100, 0b01100},  // cedilla, below
    {0b01010, 0b00100},  // caron
    {0b00000, 0b01110},  // macron
    {0b10001, 0b01110},  // breve
    {0b00010, 0b00011},  // ogonek, below
    {0b00000, 0b00100},  // dot above
    {0b01010, 0b10100},  // double acute
    {0b00100, 0b01000},  // comma below
};

bool below(Accent a) {
  return a == Accent::Cedilla || a == Accent::Ogonek || a == Accent::CommaBelow;
}

struct Composed {
  char32_t base;  // the letter that carries the accent (0: not a composed letter)
  Accent accent;
};

// U+00C0..U+00FF: the Latin-1 letters with an accent (0: a glyph of its own or none).
constexpr Composed kLatin1[64] = {
    {U'A', Accent::Grave},      {U'A', Accent::Acute},      {U'A', Accent::Circumflex},
    {U'A', Accent::Tilde},      {U'A', Accent::Diaeresis},  {U'A', Accent::Ring},
    {0, Accent::Grave},         {U'C', Accent::Cedilla},    {U'E', Accent::Grave},
    {U'E', Accent::Acute},      {U'E', Accent::Circumflex}, {U'E', Accent::Diaeresis},
    {U'I', Accent::Grave},      {U'I', Accent::Acute},      {U'I', Accent::Circumflex},
    {U'I', Accent::Diaeresis},  {0, Accent::Grave},         {U'N', Accent::Tilde},
    {U'O', Accent::Grave},      {U'O', Accent::Acute},      {U'O', Accent::Circumflex},
    {U'O', Accent::Tilde},      {U'O', Accent::Diaeresis},  {0, Accent::Grave},
    {0, Accent::Grave},         {U'U', Accent::Grave},      {U'U', Accent::Acute},
    {U'U', Accent::Circumflex}, {U'U', Accent::Diaeresis},  {U'Y', Accent::Acute},
    {0, Accent::Grave},         {0, Accent::Grave},         {U'a', Accent::Grave},
    {U'a', Accent::Acute},      {U'a', Accent::Circumflex}, {U'a', Accent::Tilde},
    {U'a', Accent::Diaeresis},  {U'a', Accent::Ring},       {0, Accent::Grave},
    {U'c', Accent::Cedilla},    {U'e', Accent::Grave},      {U'e', Accent::Acute},
    {U'e', Accent::Circumflex}, {U'e', Accent::Diaeresis},  {U'ı', Accent::Grave},
    {U'ı', Accent::Acute},      {U'ı', Accent::Circumflex}, {U'ı', Accent::Diaeresis},
    {0, Accent::Grave},         {U'n', Accent::Tilde},      {U'o', Accent::Grave},
    {U'o', Accent::Acute},      {U'o', Accent::Circumflex}, {U'o', Accent::Tilde},
    {U'o', Accent::Diaeresis},  {0, Accent::Grave},         {0, Accent::Grave},
    {U'u', Accent::Grave},      {U'u', Accent::Acute},      {U'u', Accent::Circumflex},
    {U'u', Accent::Diaeresis},  {U'y', Accent::Acute},      {0, Accent::Grave},
    {U'y', Accent::Diaeresis},
};

// Latin Extended-A (U+0100..U+017F) comes in (capital, small) pairs: `first` is the
// capital, first + 1 its small letter; `count` pairs in a row share the base letter.
struct ExtendedRun {
  char32_t first;
  char32_t base;  // the capital
  Accent accent;
};
constexpr ExtendedRun kExtendedA[] = {
    {0x100, U'A', Accent::Macron},     {0x102, U'A', Accent::Breve},
    {0x104, U'A', Accent::Ogonek},     {0x106, U'C', Accent::Acute},
    {0x108, U'C', Accent::Circumflex}, {0x10A, U'C', Accent::DotAbove},
    {0x10C, U'C', Accent::Caron},      {0x10E, U'D', Accent::Caron},
    {0x112, U'E', Accent::Macron},     {0x114, U'E', Accent::Breve},
    {0x116, U'E', Accent::DotAbove},   {0x118, U'E', Accent::Ogonek},
    {0x11A, U'E', Accent::Caron},      {0x11C, U'G', Accent::Circumflex},
    {0x11E, U'G', Accent::Breve},      {0x120, U'G', Accent::DotAbove},
    {0x122, U'G', Accent::CommaBelow}, {0x124, U'H', Accent::Circumflex},
    {0x128, U'I', Accent::Tilde},      {0x12A, U'I', Accent::Macron},
    {0x12C, U'I', Accent::Breve},      {0x12E, U'I', Accent::Ogonek},
    {0x134, U'J', Accent::Circumflex}, {0x136, U'K', Accent::CommaBelow},
    {0x143, U'N', Accent::Acute},      {0x145, U'N', Accent::CommaBelow},
    {0x147, U'N', Accent::Caron},      {0x14C, U'O', Accent::Macron},
    {0x14E, U'O', Accent::Breve},      {0x150, U'O', Accent::DoubleAcute},
    {0x154, U'R', Accent::Acute},      {0x156, U'R', Accent::CommaBelow},
    {0x158, U'R', Accent::Caron},      {0x15A, U'S', Accent::Acute},
    {0x15C, U'S', Accent::Circumflex}, {0x15E, U'S', Accent::Cedilla},
    {0x160, U'S', Accent::Caron},      {0x162, U'T', Accent::Cedilla},
    {0x164, U'T', Accent::Caron},      {0x168, U'U', Accent::Tilde},
    {0x16A, U'U', Accent::Macron},     {0x16C, U'U', Accent::Breve},
    {0x16E, U'U', Accent::Ring},       {0x170, U'U', Accent::DoubleAcute},
    {0x172, U'U', Accent::Ogonek},     {0x174, U'W', Accent::Circumflex},
    {0x176, U'Y', Accent::Circumflex}, {0x179, U'Z', Accent::Acute},
    {0x17B, U'Z', Accent::DotAbove},   {0x17D, U'Z', Accent::Caron},
};
// Romanian's comma-below letters (U+0218..U+021B) as their modern forms.
constexpr ExtendedRun kRomanian[] = {{0x218, U'S', Accent::CommaBelow},
                                     {0x21A, U'T', Accent::CommaBelow}};

GlyphBitmap parse(std::string_view rows) {
  GlyphBitmap g{};
  int row = kAccentRows;
  uint8_t bits = 0;
  int column = 0;
  for (const char ch : rows) {
    if (ch == '/') {
      g[size_t(row++)] = bits;
      bits = 0;
      column = 0;
      continue;
    }
    if (ch == '#') bits |= uint8_t(1u << (4 - column));
    ++column;
  }
  if (!rows.empty()) g[size_t(row)] = bits;
  return g;
}

const std::unordered_map<char32_t, GlyphBitmap>& own_glyphs() {
  static const std::unordered_map<char32_t, GlyphBitmap> table = [] {
    std::unordered_map<char32_t, GlyphBitmap> t;
    for (const GlyphSource& g : kGlyphs) t.emplace(g.c, parse(g.rows));
    return t;
  }();
  return table;
}

GlyphBitmap box() {
  GlyphBitmap g{};
  g[kAccentRows] = g[kAccentRows + 6] = 0b11111;
  for (int r = 1; r < 6; ++r) g[size_t(kAccentRows + r)] = 0b10001;
  return g;
}

// The accent drawn on `base`: above a capital's top row, above a small letter's x-height
// (the first letter row with ink sits two rows lower), or in the descender rows.
GlyphBitmap with_accent(char32_t base, Accent accent) {
  GlyphBitmap g = own_glyphs().at(base);
  const uint8_t* bits = kAccentBits[static_cast<int>(accent)];
  const bool capital = base >= U'A' && base <= U'Z';
  const int top = below(accent) ? kAccentRows + 7 : capital ? 0 : kAccentRows;
  g[size_t(top)] |= bits[0];
  g[size_t(top + 1)] |= bits[1];
  return g;
}

bool zero_width(char32_t c) {
  return (c >= 0x300 && c <= 0x36F) || (c >= 0x200B && c <= 0x200F) || c == 0xFEFF;
}

// The base letter and accent of a composed letter; false when `c` is not one.
bool composed(char32_t c, Composed& out) {
  if (c >= 0xC0 && c <= 0xFF) {
    out = kLatin1[c - 0xC0];
    return out.base != 0;
  }
  const auto in_runs = [&](std::span<const ExtendedRun> runs) {
    for (const ExtendedRun& r : runs) {
      if (c != r.first && c != r.first + 1) continue;
      char32_t base = c == r.first ? r.base : r.base - U'A' + U'a';
      if (base == U'i' && r.accent != Accent::Ogonek) base = U'ı';  // the accent replaces the dot
      out = {base, r.accent};
      return true;
    }
    return false;
  };
  if (in_runs(kExtendedA) || in_runs(kRomanian)) return true;
  return false;
}

}  // namespace

bool has_glyph(char32_t c) {
  Composed unused{};
  return own_glyphs().count(c) > 0 || composed(c, unused) || zero_width(c);
}

GlyphBitmap glyph_bitmap(char32_t c) {
  if (zero_width(c)) return {};
  const auto& own = own_glyphs();
  if (const auto it = own.find(c); it != own.end()) return it->second;
  Composed parts{};
  if (composed(c, parts)) return with_accent(parts.base, parts.accent);
  return box();
}

}  // namespace qkv::viz::detail
