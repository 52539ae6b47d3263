// Private: a stable 64-bit hash of a parameter or layer name, used as the Philox stream of
// its initial values or dropout masks, so they depend on the name and not on the order in
// which layers were built. It is base's FNV-1a (the same function that fingerprints a
// vocabulary): changing it would change every model's initial values.
#pragma once

#include <cstdint>
#include <string_view>

#include "qkv/base/hash.h"

namespace qkv::nn::detail {

inline uint64_t name_stream(std::string_view name) noexcept {
  return fnv1a_64(name);
}

}  // namespace qkv::nn::detail
