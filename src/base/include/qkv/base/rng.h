// Counter-based random numbers (Philox4x32-10, Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC 2011).
//
// A value depends only on (seed, stream, index), never on which thread asks or in
// what order, so dropout masks and initialisations are identical for any thread count
// and can be regenerated in backward instead of stored.
#pragma once

#include <array>
#include <cstdint>

namespace qkv {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The Philox4x32 bijection with 10 rounds: 128 random bits per (counter, key).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) noexcept;

// Stateless access: value `index` of stream `stream` under `seed`.
class CounterRng {
 public:
  constexpr CounterRng(uint64_t seed, uint64_t stream) noexcept : seed_(seed), stream_(stream) {}

  // 32 random bits.
  uint32_t bits(uint64_t index) const noexcept;
  // Uniform in [0, 1), 24 bits of resolution (every float in the grid is exact).
  float uniform(uint64_t index) const noexcept;
  // Standard normal (Box-Muller on one Philox block).
  float normal(uint64_t index) const noexcept;

  uint64_t seed() const noexcept { return seed_; }
  uint64_t stream() const noexcept { return stream_; }

 private:
  PhiloxCounter block(uint64_t block_index) const noexcept;

  uint64_t seed_;
  uint64_t stream_;
};

// Sequential generator over the same function with a position that can be saved and
// restored (checkpoints resume bit-exactly). For weight init and data shuffling.
class Rng {
 public:
  struct State {
    uint64_t seed = 0;
    uint64_t stream = 0;
    uint64_t position = 0;
  };

  explicit Rng(uint64_t seed, uint64_t stream = 0) noexcept : state_{seed, stream, 0} {}
  explicit Rng(State state) noexcept : state_(state) {}

  uint32_t next_u32() noexcept;
  float uniform() noexcept;                       // [0, 1)
  float uniform(float low, float high) noexcept;  // [low, high)
  float normal() noexcept;                        // N(0, 1)
  // Uniform integer in [0, n), without modulo bias. n must be > 0.
  uint64_t uniform_int(uint64_t n) noexcept;

  const State& state() const noexcept { return state_; }

 private:
  State state_;
};

}  // namespace qkv
