// format_fixed and format_significant: printf's "%.*f" / "%.*g" digits in every locale;
// trim_blanks.
#include "qkv/base/format.h"

#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <cstdio>
#include <limits>

namespace qkv {
namespace {

std::string printf_fixed(double v, int decimals) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
  return buffer;
}

TEST(FormatFixed, SameDigitsAsPrintfInTheCLocale) {
  const double values[] = {0.0,   -0.0,     0.5,       0.125, 2.675,
                           1.005, -3.14159, 48.530827, 1e-7,  123456789.987654321,
                           1e300, -1e-300,  99.995,    0.045};
  for (const double v : values)
    for (int d = 0; d <= 12; ++d)
      EXPECT_EQ(format_fixed(v, d), printf_fixed(v, d)) << v << " " << d;
}

TEST(FormatFixed, NonFiniteValuesAndClampedDecimals) {
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(format_fixed(-std::numeric_limits<double>::infinity(), 2), "-inf");
  EXPECT_EQ(format_fixed(std::nan(""), 2), "nan");
  EXPECT_EQ(format_fixed(1.25, -3), "1");
  EXPECT_EQ(format_fixed(0.1, 500), printf_fixed(0.1, 30));
  EXPECT_EQ(format_fixed(-1.7976931348623157e308, 30), printf_fixed(-1.7976931348623157e308, 30));
}

TEST(FormatFixed, ThePointStaysAPointInAGermanLocale) {
  const char* previous = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = previous ? previous : "C";
  if (!std::setlocale(LC_NUMERIC, "de_DE.UTF-8") && !std::setlocale(LC_NUMERIC, "de_DE"))
    GTEST_SKIP() << "no German locale installed on this machine";
  EXPECT_EQ(printf_fixed(0.5, 1), "0,5");  // what printf would have written
  EXPECT_EQ(format_fixed(0.5, 1), "0.5");
  std::setlocale(LC_NUMERIC, saved.c_str());
}

TEST(FormatSignificant, SameDigitsAsPrintfInTheCLocale) {
  const double values[] = {0.0,    -0.0,  0.5,  0.25, 1e-10,  123456789.987654321,
                           1234.5, 1e300, 2e-5, 1e21, 99.995, -3.14159265358979};
  for (const double v : values)
    for (int d = 1; d <= 17; ++d) {
      char buffer[512];
      std::snprintf(buffer, sizeof buffer, "%.*g", d, v);
      EXPECT_EQ(format_significant(v, d), buffer) << v << " " << d;
    }
  EXPECT_EQ(format_significant(std::numeric_limits<double>::infinity(), 4), "inf");
  EXPECT_EQ(format_significant(0.5, 0), "0.5");  // clamped to one digit
}

TEST(TrimBlanks, DropsSpacesAndTabsAroundOnly) {
  EXPECT_EQ(trim_blanks(" \t a b\t "), "a b");
  EXPECT_EQ(trim_blanks(" \t "), "");
  EXPECT_EQ(trim_blanks(""), "");
  EXPECT_EQ(trim_blanks("x"), "x");
  EXPECT_EQ(trim_blanks("\nx\n"), "\nx\n");  // line breaks are not blanks here
}

}  // namespace
}  // namespace qkv
