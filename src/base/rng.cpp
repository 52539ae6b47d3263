#include "qkv/base/rng.h"

#include <cmath>
#include <numbers>

namespace qkv {
namespace {

// Round constants from the Philox paper (Table 2) and Random123.
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline PhiloxCounter philox_round(PhiloxCounter c, PhiloxKey k) noexcept {
  const uint64_t p0 = uint64_t{kMul0} * c[0];
  const uint64_t p1 = uint64_t{kMul1} * c[2];
  const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

inline float to_unit_float(uint32_t bits) noexcept {
  return static_cast<float>(bits >> 8) * 0x1.0p-24f;  // [0, 1)
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) noexcept {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    counter = philox_round(counter, key);
  }
  return counter;
}

PhiloxCounter CounterRng::block(uint64_t block_index) const noexcept {
  const PhiloxCounter counter = {
      static_cast<uint32_t>(block_index), static_cast<uint32_t>(block_index >> 32),
      static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)};
  const PhiloxKey key = {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)};
  return philox4x32_10(counter, key);
}

uint32_t CounterRng::bits(uint64_t index) const noexcept {
  return block(index >> 2)[index & 3];
}

float CounterRng::uniform(uint64_t index) const noexcept {
  return to_unit_float(bits(index));
}

float CounterRng::normal(uint64_t index) const noexcept {
  const PhiloxCounter b = block(index);
  // u1 in (0, 1] so log(u1) is finite.
  const double u1 = (static_cast<double>(b[0] >> 8) + 1.0) * 0x1.0p-24;
  const double u2 = static_cast<double>(b[1] >> 8) * 0x1.0p-24;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

uint32_t Rng::next_u32() noexcept {
  return CounterRng(state_.seed, state_.stream).bits(state_.position++);
}

float Rng::uniform() noexcept {
  return to_unit_float(next_u32());
}

float Rng::uniform(float low, float high) noexcept {
  return low + (high - low) * uniform();
}

float Rng::normal() noexcept {
  // Normals use their own block per draw so positions stay one counter per call.
  return CounterRng(state_.seed, state_.stream ^ 0x6e6f726d616cULL).normal(state_.position++);
}

uint64_t Rng::uniform_int(uint64_t n) noexcept {
  if (n <= 1) return 0;
  // Rejection sampling on 64-bit draws: accept below the largest multiple of n.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
  for (;;) {
    const uint64_t hi = next_u32(), lo = next_u32();
    const uint64_t x = (hi << 32) | lo;
    if (x < limit) return x % n;
  }
}

}  // namespace qkv
