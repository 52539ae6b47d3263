// Private: a stable 64-bit hash of a parameter or layer name (FNV-1a), used as the
// Philox stream of its initial values or dropout masks, so they depend on the name and
// not on the order in which layers were built.
#pragma once

#include <cstdint>
#include <string_view>

namespace qkv::nn::detail {

inline uint64_t name_stream(std::string_view name) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace qkv::nn::detail
