// Global gradient norm, clipping and the finite check.
#include "qkv/train/clip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "qkv/base/thread_pool.h"
#include "test_util.h"

namespace qkv::train {
namespace {

using testing::bitwise_equal;
using testing::expect_error;
using testing::random_grads;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Σ g² in long double, one element after the other: a different order from the chunked
// sum, so agreement is to rounding (relative ~n·2^-53 at worst; 1e-12 is loose enough).
double sequential_norm(const std::vector<float>& g) {
  long double s = 0;
  for (float x : g) s += static_cast<long double>(x) * x;
  return double(std::sqrt(s));
}

TEST(GlobalNorm, ExactOnSmallVectors) {
  EXPECT_EQ(global_norm(std::vector<float>{3.0f, 4.0f}), 5.0);
  EXPECT_EQ(global_norm(std::vector<float>{}), 0.0);
  EXPECT_EQ(global_norm(std::vector<float>{-2.0f}), 2.0);
  // Squares of large floats would overflow float32, not double.
  EXPECT_EQ(global_norm(std::vector<float>{0x3p100f, 0x4p100f}), 0x5p100);
}

TEST(GlobalNorm, MatchesASequentialSumOverManyChunks) {
  const std::vector<float> g = random_grads(7 * kReduceGrain + 5, 21);
  EXPECT_NEAR(global_norm(g), sequential_norm(g), 1e-12 * sequential_norm(g));
}

TEST(GlobalNorm, OneAndTwoThreadsGiveBitwiseEqualNorms) {
  const int before = num_threads();
  const std::vector<float> g = random_grads(10 * kReduceGrain + 5, 22);
  set_num_threads(1);
  const double one = global_norm(g);
  set_num_threads(2);
  const double two = global_norm(g);
  set_num_threads(before);
  EXPECT_EQ(std::memcmp(&one, &two, sizeof one), 0);
}

// Scaling by s = max / norm rounds s to float (relative ≤ 2^-24) and each product once
// more (≤ 2^-24), so the clipped norm is max_norm within 2·2^-24 < 1.3e-7 (plus the
// double sums, ~1e-15): 3e-7 allows for it.
TEST(Clip, ScalesToExactlyTheMaximumNorm) {
  std::vector<float> g = random_grads(3 * kReduceGrain + 7, 23);
  const double before = global_norm(g);
  ASSERT_GT(before, 10.0);
  const std::vector<float> original = g;
  for (double max_norm : {1.0, 0.25, before / 3}) {
    g = original;
    const ClipResult r = clip_by_global_norm(g, max_norm);
    EXPECT_TRUE(r.finite);
    EXPECT_TRUE(r.clipped);
    EXPECT_EQ(r.norm, before);
    EXPECT_NEAR(global_norm(g), max_norm, 3e-7 * max_norm);
    // Every element scaled by the same float factor: the direction is kept.
    const float s = float(max_norm / before);
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], original[i] * s) << i;
  }
}

TEST(Clip, LeavesSmallGradientsUnchanged) {
  std::vector<float> g = {3.0f, 4.0f};
  for (double max_norm : {5.0, 6.0, 1e9}) {
    const ClipResult r = clip_by_global_norm(g, max_norm);
    EXPECT_FALSE(r.clipped);
    EXPECT_TRUE(r.finite);
    EXPECT_EQ(r.norm, 5.0);
    EXPECT_TRUE(bitwise_equal(g, {3.0f, 4.0f}));
  }
}

// NaN or ±Inf anywhere (first element, a chunk border, the last): reported, never
// modified, and find_non_finite names the first one whatever chunk it is in.
TEST(NonFinite, DetectedAndReportedWithoutModifyingTheGradients) {
  const int64_t n = 3 * kReduceGrain + 9;
  const std::vector<float> clean = random_grads(n, 24);
  EXPECT_TRUE(all_finite(clean));
  EXPECT_EQ(find_non_finite(clean), -1);
  EXPECT_TRUE(std::isfinite(global_norm(clean)));
  const int64_t spots[] = {0, kReduceGrain - 1, kReduceGrain, 2 * kReduceGrain + 3, n - 1};
  for (float bad : {std::nanf(""), kInf, -kInf}) {
    for (int64_t at : spots) {
      SCOPED_TRACE(std::to_string(bad) + " at " + std::to_string(at));
      std::vector<float> g = clean;
      g[size_t(at)] = bad;
      if (at != n - 1) g[size_t(n - 1)] = std::nanf("");  // a later one must not win
      const std::vector<float> before = g;
      EXPECT_FALSE(all_finite(g));
      EXPECT_EQ(find_non_finite(g), at);
      EXPECT_FALSE(std::isfinite(global_norm(g)));
      const ClipResult r = clip_by_global_norm(g, 1.0);
      EXPECT_FALSE(r.finite);
      EXPECT_FALSE(r.clipped);
      EXPECT_TRUE(bitwise_equal(g, before));
    }
  }
}

TEST(ClipErrors, BadMaximumNamesTheField) {
  std::vector<float> g = {1.0f};
  for (double bad : {0.0, -1.0, std::nan(""), double(kInf)})
    expect_error<FieldError>([&] { clip_by_global_norm(g, bad); }, {"clip_norm", "> 0"});
  EXPECT_EQ(g[0], 1.0f);
}

}  // namespace
}  // namespace qkv::train
