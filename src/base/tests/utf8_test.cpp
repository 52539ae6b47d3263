// base/utf8.h against the definition: a byte sequence is well-formed UTF-8 exactly when it
// is the encoding of a code point that is not a surrogate and at most U+10FFFF.
#include "qkv/base/utf8.h"

#include <gtest/gtest.h>

namespace qkv::utf8 {
namespace {

// The value the bits of an n-byte sequence spell, and whether it is the shortest form of
// a scalar value (the definition, written independently of the table-driven decoder).
bool is_encoding_of_scalar(const std::string& s) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const size_t n = s.size();
  const unsigned char lead_mask[] = {0, 0x80, 0xE0, 0xF0, 0xF8};
  const unsigned char lead_bits[] = {0, 0x00, 0xC0, 0xE0, 0xF0};
  if ((b(0) & lead_mask[n]) != lead_bits[n]) return false;
  char32_t c = b(0) & static_cast<unsigned char>(~lead_mask[n]);
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return false;
    c = (c << 6) | (b(k) & 0x3F);
  }
  const char32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
  return c >= shortest[n] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
}

TEST(Utf8, EveryScalarValueRoundTrips) {
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    std::string s;
    append(s, c);
    ASSERT_EQ(sequence_length(s, 0), s.size()) << std::hex << uint32_t(c);
    ASSERT_EQ(code_point_at(s, 0, s.size()), c);
  }
  std::string s;
  append(s, 0xD800);  // not encodable: the replacement character
  append(s, 0x110000);
  EXPECT_EQ(s, "\uFFFD\uFFFD");
}

TEST(Utf8, AcceptsExactlyTheEncodingsOfScalarValues) {
  // Every 1- and 2-byte sequence, every 3-byte one, 4-byte leads with every second byte.
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, char(a));
    EXPECT_EQ(sequence_length(one, 0) == 1, is_encoding_of_scalar(one)) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two = {char(a), char(b)};
      if (a >= 0xC0 && a < 0xE0) {
        ASSERT_EQ(sequence_length(two, 0) == 2, is_encoding_of_scalar(two)) << a << " " << b;
      }
      if (a >= 0xE0 && a < 0xF0)
        for (int c = 0; c < 256; ++c) {
          const std::string three = {char(a), char(b), char(c)};
          ASSERT_EQ(sequence_length(three, 0) == 3, is_encoding_of_scalar(three));
        }
      if (a >= 0xF0) {
        const std::string four = {char(a), char(b), char(0x80), char(0xBF)};
        ASSERT_EQ(sequence_length(four, 0) == 4, is_encoding_of_scalar(four)) << a << " " << b;
      }
    }
  }
}

TEST(Utf8, FirstInvalidAndDecode) {
  EXPECT_TRUE(is_valid(""));
  EXPECT_TRUE(is_valid("Stra\u00DFe \u65E5\u672C \U0001F600"));
  EXPECT_EQ(first_invalid("ab\xC3"), 2u);              // truncated
  EXPECT_EQ(first_invalid("a\xC0\xAF"), 1u);           // overlong '/'
  EXPECT_EQ(first_invalid("\xED\xA0\x80x"), 0u);       // surrogate U+D800
  EXPECT_EQ(first_invalid("ok\xF4\x90\x80\x80"), 2u);  // above U+10FFFF
  EXPECT_EQ(decode("a\u00E9\U0001F600"), U"a\u00E9\U0001F600");
  EXPECT_EQ(decode("a\xFF"
                   "b"),
            U"a\uFFFDb");
  EXPECT_EQ(decode("\xE2\x82"), U"\uFFFD\uFFFD");  // each bad byte once
}

}  // namespace
}  // namespace qkv::utf8
