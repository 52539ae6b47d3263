#include "qkv/base/aligned.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "qkv/base/cpu.h"
#include "qkv/base/error.h"

namespace qkv {
namespace {

TEST(Aligned, PointersAre64ByteAligned) {
  for (size_t n : {1, 7, 64, 1000}) {
    auto a = make_aligned_array<float>(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % kAlignment, 0u);
  }
  EXPECT_EQ(aligned_alloc_bytes(0), nullptr);
}

TEST(Aligned, AbsurdSizesRaiseResourceError) {
  EXPECT_THROW(make_aligned_array<float>(SIZE_MAX / 2), ResourceError);
  const size_t physical = physical_memory_bytes();
  ASSERT_GT(physical, 0u);
  EXPECT_THROW(aligned_alloc_bytes(physical + 1), ResourceError);
}

TEST(Cpu, FeaturesAreConsistent) {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f) {
    EXPECT_TRUE(f.avx2);
  }
  if (f.avx2) {
    EXPECT_TRUE(f.avx);
  }
  EXPECT_FALSE(describe_cpu_features(f).empty());
}

}  // namespace
}  // namespace qkv
