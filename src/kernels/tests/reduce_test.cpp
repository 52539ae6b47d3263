#include "qkv/kernels/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::kOddSizes;
using testing::random_floats;
using testing::seed_for;

constexpr double kEps = std::numeric_limits<float>::epsilon();

// Float summation of k terms (any association order) is within (k − 1)·u·Σ|x| of the
// exact sum, u = eps/2 (Higham, Accuracy and Stability, eq. 4.4). The kernels split the
// terms over several accumulators, so k − 1 bounds the depth; we allow (k + 2)·eps·Σ|x|
// (the references accumulate in double, ~exact at these sizes).
double sum_bound(const float* x, int64_t n, int64_t stride = 1) {
  double abs_sum = 0;
  for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(double(x[i * stride]));
  return double(n + 2) * kEps * abs_sum;
}

TEST(Reduce, SumDotMaxAtOddSizes) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t n : kOddSizes) {
      SCOPED_TRACE(n);
      const auto a = random_floats(n, seed_for(1, n), -2, 2);
      const auto b = random_floats(n, seed_for(2, n), -2, 2);
      EXPECT_NEAR(sum(a.data(), n), ref::sum(a.data(), n), sum_bound(a.data(), n));
      std::vector<float> ab(a.size());
      for (size_t i = 0; i < a.size(); ++i) ab[i] = a[i] * b[i];
      // Products carry one extra rounding each (or none, fused): same bound on Σ|a·b|.
      EXPECT_NEAR(dot(a.data(), b.data(), n), ref::dot(a.data(), b.data(), n),
                  sum_bound(ab.data(), n) + kEps * std::fabs(ref::dot(a.data(), b.data(), n)));
      EXPECT_EQ(max(a.data(), n), ref::max(a.data(), n));  // max is exact
    }
  });
}

TEST(Reduce, MaxFindsTheMaximumAnywhere) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t n : kOddSizes)
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        auto x = random_floats(n, seed_for(3, n), -5, -1);
        x[size_t(at)] = 3.5f;
        EXPECT_EQ(max(x.data(), n), 3.5f) << n << " at " << at;
      }
    const float inf = std::numeric_limits<float>::infinity();
    const float all_neg_inf[3] = {-inf, -inf, -inf};
    EXPECT_EQ(max(all_neg_inf, 3), -inf);
  });
}

TEST(Reduce, EmptyInputs) {
  for_each_simd_target([](const SimdTarget&) {
    const float x = 4.0f;
    EXPECT_EQ(sum(&x, 0), 0.0f);
    EXPECT_EQ(dot(&x, &x, 0), 0.0f);
    EXPECT_EQ(max(&x, 0), -std::numeric_limits<float>::infinity());
    float y = 9.0f;
    sum_rows(&x, &y, 0, 3);
    EXPECT_EQ(y, 9.0f);
    sum_cols(&x, &y, 0, 1);  // zero rows: the column sums are 0
    EXPECT_EQ(y, 0.0f);
  });
}

TEST(Reduce, SumRowsAndColsAtOddShapes) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : kOddSizes)
      for (int64_t cols : kOddSizes) {
        if (rows * cols > 70000) continue;  // keeps the test fast; big shapes below
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
        const auto x = random_floats(rows * cols, seed_for(4, rows, cols));
        std::vector<float> got_r(static_cast<size_t>(rows)), want_r(static_cast<size_t>(rows));
        sum_rows(x.data(), got_r.data(), rows, cols);
        ref::sum_rows(x.data(), want_r.data(), rows, cols);
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_NEAR(got_r[size_t(r)], want_r[size_t(r)], sum_bound(x.data() + r * cols, cols))
              << "row " << r;
        std::vector<float> got_c(static_cast<size_t>(cols)), want_c(static_cast<size_t>(cols));
        sum_cols(x.data(), got_c.data(), rows, cols);
        ref::sum_cols(x.data(), want_c.data(), rows, cols);
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_NEAR(got_c[size_t(c)], want_c[size_t(c)], sum_bound(x.data() + c, rows, cols))
              << "col " << c;
      }
  });
}

// Sizes well past one parallel chunk: sums must be bitwise identical for 1 and 2 threads
// (and still accurate).
TEST(Reduce, BitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  const int64_t n = (int64_t{1} << 20) + 37;  // > 64 chunks of the base grain
  const auto a = random_floats(n, 5);
  const auto b = random_floats(n, 6);
  const int64_t rows = 1023, cols = 1025;
  auto run = [&](int threads) {
    set_num_threads(threads);
    std::vector<float> out = {sum(a.data(), n), dot(a.data(), b.data(), n), max(a.data(), n)};
    std::vector<float> r(static_cast<size_t>(rows)), c(static_cast<size_t>(cols));
    sum_rows(a.data(), r.data(), rows, cols);
    sum_cols(a.data(), c.data(), rows, cols);
    out.insert(out.end(), r.begin(), r.end());
    out.insert(out.end(), c.begin(), c.end());
    return out;
  };
  for_each_simd_target([&](const SimdTarget&) {
    const auto one = run(1);
    const auto two = run(2);
    EXPECT_TRUE(bitwise_equal(one, two));
    EXPECT_NEAR(one[0], ref::sum(a.data(), n), sum_bound(a.data(), n));
  });
  set_num_threads(saved);
}

// find_not_below / find_above against their references, on every target: rows far
// below the threshold with one planted match (or none) at every position class -- the
// first lane, inside a 4-vector block, a block's last lane, the tail --, ties (x == t:
// not below, not above), NaNs (not below, never above) and -inf rows.
TEST(Reduce, FindNotBelowAndFindAboveMatchTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for_each_simd_target([&](const SimdTarget&) {
    for (int64_t n : {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 8000}) {
      std::vector<int64_t> positions = {-1};  // -1: nothing planted
      for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{15}, int64_t{16}, int64_t{47},
                        int64_t{63}, int64_t{64}, n / 2, n - 2, n - 1})
        if (p >= 0 && p < n) positions.push_back(p);
      for (int64_t p : positions)
        for (const float planted : {0.5f, 0.0f, nan, inf}) {
          SCOPED_TRACE(::testing::Message() << "n " << n << " at " << p << " value " << planted);
          std::vector<float> x = random_floats(n, seed_for(n, p + 2), -9, -1);
          if (p >= 0) x[size_t(p)] = planted;
          if (p >= 0 && p + 3 < n) x[size_t(p + 3)] = 1.0f;  // a later match: the first wins
          for (const float t : {0.0f, -0.5f, -inf}) {
            EXPECT_EQ(find_not_below(x.data(), n, t), ref::find_not_below(x.data(), n, t)) << t;
            EXPECT_EQ(find_above(x.data(), n, t), ref::find_above(x.data(), n, t)) << t;
          }
        }
    }
  });
}

}  // namespace
}  // namespace qkv::kernels
