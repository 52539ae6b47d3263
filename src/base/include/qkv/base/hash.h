// A stable 64-bit hash of bytes: FNV-1a (Fowler, Noll, Vo; offset basis 14695981039346656037,
// prime 1099511628211). Identifies a file's contents across runs and machines, e.g. the
// vocabulary a model was trained with. Not cryptographic: it catches a swapped or edited
// file, not a forged one.
#pragma once

#include <cstdint>
#include <string_view>

namespace qkv {

constexpr uint64_t fnv1a_64(std::string_view bytes) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace qkv
