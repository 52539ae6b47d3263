// A count with its noun for messages: "1 sentence", "2 sentences", "0 sentences"
// (English: singular for exactly one). One helper, so no summary says "1 sentences".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qkv {

// `plural` defaults to `singular` + "s".
inline std::string count_of(int64_t n, std::string_view singular, std::string_view plural = {}) {
  std::string out = std::to_string(n) + " ";
  if (n == 1) return out.append(singular);
  if (!plural.empty()) return out.append(plural);
  return out.append(singular).append("s");
}

}  // namespace qkv
