#include "qkv/base/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace qkv {
namespace {

// Known-answer vectors from Random123's kat_vectors (philox4x32 with 10 rounds).
TEST(Philox, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(CounterRng, ValueDependsOnlyOnSeedStreamIndex) {
  const CounterRng a(42, 7), b(42, 7), other_seed(43, 7), other_stream(42, 8);
  for (uint64_t i : {0ull, 1ull, 5ull, 1000000007ull}) {
    EXPECT_EQ(a.bits(i), b.bits(i));
    EXPECT_NE(a.bits(i), other_seed.bits(i));
    EXPECT_NE(a.bits(i), other_stream.bits(i));
  }
  // Reading in a different order gives the same values.
  std::vector<uint32_t> forward, backward;
  for (uint64_t i = 0; i < 64; ++i) forward.push_back(a.bits(i));
  for (uint64_t i = 64; i-- > 0;) backward.push_back(a.bits(i));
  std::reverse(backward.begin(), backward.end());
  EXPECT_EQ(forward, backward);
}

TEST(CounterRng, UniformMomentsAndRange) {
  const CounterRng rng(1, 0);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng.uniform(i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum_sq += double(u) * u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sum_sq / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
}

TEST(CounterRng, NormalMoments) {
  const CounterRng rng(2, 0);
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal(i);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
}

TEST(Rng, SavedStateResumesExactly) {
  Rng rng(99);
  for (int i = 0; i < 10; ++i) rng.uniform();
  const Rng::State saved = rng.state();
  std::vector<float> first;
  for (int i = 0; i < 10; ++i) first.push_back(rng.normal());
  Rng resumed(saved);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(resumed.normal(), first[i]);
}

TEST(Rng, UniformIntCoversRangeWithoutBias) {
  Rng rng(5);
  std::vector<int> counts(7, 0);
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    const uint64_t v = rng.uniform_int(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, n / 7, 400);
  EXPECT_EQ(rng.uniform_int(1), 0u);
}

}  // namespace
}  // namespace qkv
