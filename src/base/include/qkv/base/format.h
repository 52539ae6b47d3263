// Numbers as text, the same in every locale: the one fixed-point formatter behind the
// eval scores, the tables, the SVG coordinates and the report.
#pragma once

#include <string>

namespace qkv {

// printf("%.*f", decimals, value) as the C locale writes it ('.' for the decimal point
// whatever the process locale, "inf", "-inf", "nan" for non-finite values); decimals is
// clamped to [0, 30]. std::to_chars underneath, so a German locale cannot turn 0.5 into
// "0,5" inside an SVG attribute or a sacreBLEU line.
std::string format_fixed(double value, int decimals);

}  // namespace qkv
