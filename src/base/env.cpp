#include "qkv/base/env.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "qkv/base/error.h"

namespace qkv {

std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view s(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  QKV_CHECK(
      !s.empty() && ec == std::errc() && end == s.data() + s.size() && value >= min && value <= max,
      ConfigError, "environment variable ", name, "='", s, "' must be an integer in [", min, ", ",
      max, "]");
  return value;
}

}  // namespace qkv
