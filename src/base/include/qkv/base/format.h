// Numbers as text, the same in every locale: the one fixed-point formatter behind the
// eval scores, the tables, the SVG coordinates and the report.
#pragma once

#include <string>
#include <string_view>

namespace qkv {

// printf("%.*f", decimals, value) as the C locale writes it ('.' for the decimal point
// whatever the process locale, "inf", "-inf", "nan" for non-finite values); decimals is
// clamped to [0, 30]. std::to_chars underneath, so a German locale cannot turn 0.5 into
// "0,5" inside an SVG attribute or a sacreBLEU line.
std::string format_fixed(double value, int decimals);

// printf("%.*g", digits, value) as the C locale writes it: `digits` significant digits
// (clamped to [1, 30]), fixed or exponent form whichever is shorter, trailing zeros
// dropped ("0.25", "1e-10", "1234.5"); the same non-finite spellings as format_fixed.
std::string format_significant(double value, int digits);

// `text` without the spaces and tabs around it (a view into `text`).
constexpr std::string_view trim_blanks(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

}  // namespace qkv
