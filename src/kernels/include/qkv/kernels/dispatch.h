// Which SIMD instruction set the kernels run on.
//
// Kernels are compiled for several targets (Highway dynamic dispatch: a portable
// fallback -- SCALAR with GCC 12.2, where Highway 1.0.3 deems EMU128 broken, EMU128 with
// newer compilers -- AVX2+FMA and AVX-512) and the best one the CPU supports is picked at
// run time, so one binary is correct on any x86-64 and fast where AVX-512 exists.
// Tests and benchmarks can pin a target to check every one of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qkv::kernels {

struct SimdTarget {
  int64_t bits;      // Highway's target bit
  std::string name;  // "AVX3", "AVX2", "SCALAR" or "EMU128"
};

// Targets compiled into qkv that this CPU can run, best first.
std::vector<SimdTarget> simd_targets();
// The target dispatch uses now.
std::string active_simd_target();

// Pins dispatch to one target (bits from simd_targets()); 0 restores the automatic
// choice. For tests and benchmarks: not thread-safe against concurrent kernel calls.
void force_simd_target(int64_t bits);

class ScopedSimdTarget {
 public:
  explicit ScopedSimdTarget(int64_t bits) { force_simd_target(bits); }
  ~ScopedSimdTarget() { force_simd_target(0); }
  ScopedSimdTarget(const ScopedSimdTarget&) = delete;
  ScopedSimdTarget& operator=(const ScopedSimdTarget&) = delete;
};

}  // namespace qkv::kernels
