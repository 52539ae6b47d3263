#include "qkv/kernels/dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "qkv/base/cpu.h"
#include "qkv/kernels/reduce.h"

namespace qkv::kernels {
namespace {

bool has_target(const std::vector<SimdTarget>& targets, const std::string& name) {
  return std::any_of(targets.begin(), targets.end(),
                     [&](const SimdTarget& t) { return t.name == name; });
}

TEST(Dispatch, TargetsNonEmptyBestFirstWithPortableFallback) {
  const auto targets = simd_targets();
  ASSERT_FALSE(targets.empty());
  // The portable fallback is always compiled and always runnable: EMU128, or SCALAR
  // where Highway deems EMU128 broken (GCC < 12.3, which includes Debian 12's 12.2).
  EXPECT_TRUE(targets.back().name == "EMU128" || targets.back().name == "SCALAR")
      << targets.back().name;
  // Best first: Highway's x86 target bits grow as targets get worse.
  for (size_t i = 1; i < targets.size(); ++i) EXPECT_LT(targets[i - 1].bits, targets[i].bits);
}

TEST(Dispatch, VectorTargetsMatchTheCpu) {
  const auto targets = simd_targets();
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx2 && cpu.fma) {
    EXPECT_TRUE(has_target(targets, "AVX2"));
  }
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl) {
    EXPECT_TRUE(has_target(targets, "AVX3"));
  }
  if (!cpu.avx2) {
    EXPECT_FALSE(has_target(targets, "AVX2"));
  }
}

TEST(Dispatch, ForceAndRestore) {
  const std::string automatic = active_simd_target();
  EXPECT_EQ(automatic, simd_targets().front().name);
  for (const SimdTarget& t : simd_targets()) {
    {
      ScopedSimdTarget pin(t.bits);
      EXPECT_EQ(active_simd_target(), t.name);
      // A kernel call dispatches (and must work) under the pinned target.
      const float x[5] = {1, 2, 3, 4, 5};
      EXPECT_EQ(sum(x, 5), 15.0f);
      EXPECT_EQ(active_simd_target(), t.name);
    }
    EXPECT_EQ(active_simd_target(), automatic);
  }
  // simd_targets() reports the CPU's targets even while one is pinned.
  const size_t count = simd_targets().size();
  ScopedSimdTarget pin(simd_targets().back().bits);
  EXPECT_EQ(simd_targets().size(), count);
  EXPECT_EQ(active_simd_target(), simd_targets().back().name);
}

}  // namespace
}  // namespace qkv::kernels
