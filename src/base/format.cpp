// format_fixed (base/format.h).
#include "qkv/base/format.h"

#include <algorithm>
#include <charconv>

namespace qkv {

std::string format_fixed(double value, int decimals) {
  // 1e308 with 30 decimals: 309 digits, the point and 30 more, well within the buffer.
  char buffer[400];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value,
                                       std::chars_format::fixed, std::clamp(decimals, 0, 30));
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

std::string format_significant(double value, int digits) {
  char buffer[64];  // 30 digits, sign, point, exponent
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value,
                                       std::chars_format::general, std::clamp(digits, 1, 30));
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

}  // namespace qkv
