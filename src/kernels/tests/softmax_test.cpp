#include "qkv/kernels/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::kOddSizes;
using testing::random_floats;
using testing::random_ints;
using testing::seed_for;
using testing::Tolerance;

constexpr double kEps = std::numeric_limits<float>::epsilon();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Tolerances against the double-precision reference on the same float inputs
// (scores |s| <= 4 here; the ±80 test checks softmax only).
//  softmax: exp(s − m) within ~1 ulp (Highway's Exp), times 1/Z (2 roundings), where Z
//    is a float sum of positive terms in per-lane chains of cols/lanes terms, relative
//    error <= (cols/lanes)·u (Higham eq. 4.4, no cancellation). Lanes can be 1 (the
//    SCALAR fallback), so: relative (8 + cols/32)·eps. Measured worst: 3.6 eps (AVX3,
//    AVX2) to 15 eps (SCALAR) at 1023 columns, against 40 eps allowed.
//  log-softmax: s − lse is an absolute error: half an ulp of |s| + |lse| (<= ~10, i.e.
//    ~4 eps) plus Z's relative error carried into log Z: absolute (16 + cols/32)·eps.
//    Measured worst: 4.4 eps at 7 columns, 16 eps (SCALAR) at 1023.
//  Both also pass within 16 ulp, for values where ulps are the natural unit.
Tolerance softmax_tol(int64_t cols) {
  return {(8 + double(cols) / 32) * kEps, 1e-30, 16};
}
Tolerance log_softmax_tol(int64_t cols) {
  return {0, (16 + double(cols) / 32) * kEps, 16};
}

struct Case {
  int64_t rows, cols;
  std::vector<float> x;
};

Case make_case(int64_t rows, int64_t cols, uint32_t seed, float scale = 4.0f) {
  return {rows, cols, random_floats(rows * cols, seed, -scale, scale)};
}

// Runs kernel and double reference (softmax or log-softmax) and compares.
// extra_rel widens the relative bound (large logits, see LargeLogitsStayFinite).
void check_forward(const Case& c, const SoftmaxMask& mask, const std::vector<float>& bias,
                   bool log_space, double extra_rel = 0) {
  std::vector<float> got(c.x.size());
  if (log_space)
    log_softmax_rows(c.x.data(), got.data(), c.rows, c.cols, mask);
  else
    softmax_rows(c.x.data(), got.data(), c.rows, c.cols, mask);

  const auto xd = testing::to_double(c.x);
  const auto bd = testing::to_double(bias);
  SoftmaxMaskT<double> maskd{mask.valid_lengths, mask.bias ? bd.data() : nullptr,
                             mask.bias_row_stride};
  std::vector<double> want(xd.size());
  if (log_space)
    ref::log_softmax_rows(xd.data(), want.data(), c.rows, c.cols, maskd);
  else
    ref::softmax_rows(xd.data(), want.data(), c.rows, c.cols, maskd);
  Tolerance tol = log_space ? log_softmax_tol(c.cols) : softmax_tol(c.cols);
  tol.rel += extra_rel;
  EXPECT_TRUE(all_close(got, testing::to_float(want), tol))
      << (log_space ? "log_softmax " : "softmax ") << c.rows << " x " << c.cols;

  // In place (y aliases x) gives the same bits.
  std::vector<float> inplace = c.x;
  if (log_space)
    log_softmax_rows(inplace.data(), inplace.data(), c.rows, c.cols, mask);
  else
    softmax_rows(inplace.data(), inplace.data(), c.rows, c.cols, mask);
  EXPECT_TRUE(bitwise_equal(inplace, got)) << "in place";
}

TEST(Softmax, UnmaskedAtOddShapes) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : kOddSizes)
      for (int64_t cols : kOddSizes) {
        if (rows * cols > 70000) continue;
        const Case c = make_case(rows, cols, seed_for(1, rows, cols));
        check_forward(c, {}, {}, false);
        check_forward(c, {}, {}, true);
      }
  });
}

// valid_lengths anywhere in [-2, cols + 3]: 0 and negative lengths mask whole rows,
// lengths beyond cols clamp to cols.
TEST(Softmax, ValidLengths) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t cols : kOddSizes) {
      const int64_t rows = 17;
      const Case c = make_case(rows, cols, seed_for(2, cols));
      auto lengths = random_ints(rows, seed_for(3, cols), -2, cols + 3);
      lengths[0] = 0;
      lengths[1] = cols + 100;
      lengths[2] = cols;
      SoftmaxMask mask{lengths.data(), nullptr, 0};
      check_forward(c, mask, {}, false);
      check_forward(c, mask, {}, true);
    }
  });
}

// Additive bias: a per-row bias (stride cols) with random -inf entries (a few rows all
// -inf), and a broadcast causal bias (stride 0 would repeat row 0; here row r sees
// columns <= r through a (rows, cols) causal matrix).
TEST(Softmax, AdditiveBiasWithInfinities) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t cols : kOddSizes) {
      const int64_t rows = 19;
      const Case c = make_case(rows, cols, seed_for(4, cols));
      auto bias = random_floats(rows * cols, seed_for(5, cols), -1, 1);
      const auto pick = random_ints(rows * cols, seed_for(6, cols), 0, 3);
      for (size_t i = 0; i < bias.size(); ++i)
        if (pick[i] == 0) bias[i] = -kInf;
      for (int64_t k = 0; k < cols; ++k) bias[size_t(3 * cols + k)] = -kInf;  // row 3 dead
      const auto lengths = random_ints(rows, seed_for(7, cols), 0, cols);
      for (SoftmaxMask mask :
           {SoftmaxMask{nullptr, bias.data(), cols}, SoftmaxMask{lengths.data(), bias.data(), cols},
            SoftmaxMask{nullptr, bias.data(), 0}}) {
        check_forward(c, mask, bias, false);
        check_forward(c, mask, bias, true);
      }
      std::vector<float> causal(size_t(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) causal[size_t(r * cols + k)] = k <= r ? 0.0f : -kInf;
      check_forward(c, {nullptr, causal.data(), cols}, causal, false);
      check_forward(c, {nullptr, causal.data(), cols}, causal, true);
    }
  });
}

// Fully masked rows: softmax writes zeros, log-softmax -inf, never NaN.
TEST(Softmax, FullyMaskedRows) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t cols : kOddSizes) {
      const Case c = make_case(3, cols, seed_for(8, cols));
      const std::vector<int64_t> zero = {0, 0, 0};
      std::vector<float> y(c.x.size(), 5.0f);
      softmax_rows(c.x.data(), y.data(), 3, cols, {zero.data(), nullptr, 0});
      for (float v : y) ASSERT_EQ(v, 0.0f);
      log_softmax_rows(c.x.data(), y.data(), 3, cols, {zero.data(), nullptr, 0});
      for (float v : y) ASSERT_EQ(v, -kInf);
      const std::vector<float> dead(size_t(cols), -kInf);
      softmax_rows(c.x.data(), y.data(), 3, cols, {nullptr, dead.data(), 0});
      for (float v : y) ASSERT_EQ(v, 0.0f);
      log_softmax_rows(c.x.data(), y.data(), 3, cols, {nullptr, dead.data(), 0});
      for (float v : y) ASSERT_EQ(v, -kInf);
      // -inf scores in x itself count as masked too.
      std::vector<float> x_dead(c.x.size(), -kInf);
      softmax_rows(x_dead.data(), x_dead.data(), 3, cols);
      for (float v : x_dead) ASSERT_EQ(v, 0.0f);
    }
  });
}

// Logits of ±80 (exp(160) overflows float): subtracting the max keeps every exp <= 1.
TEST(Softmax, LargeLogitsStayFinite) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t cols : kOddSizes) {
      Case c = make_case(4, cols, seed_for(9, cols), 80.0f);
      c.x[0] = 80.0f;
      c.x[size_t(c.x.size() - 1)] = -80.0f;
      // The float difference s − m (|s − m| up to 160) is rounded to half an ulp, 2^-17
      // absolute, which exp turns into relative error: 64 eps more than the usual bound.
      check_forward(c, {}, {}, false, 64 * kEps);
      std::vector<float> y(c.x.size());
      log_softmax_rows(c.x.data(), y.data(), 4, cols);
      for (float v : y) ASSERT_TRUE(std::isfinite(v));
      std::vector<float> p(c.x.size());
      softmax_rows(c.x.data(), p.data(), 4, cols);
      for (int64_t r = 0; r < 4; ++r) {
        double total = 0;
        for (int64_t k = 0; k < cols; ++k) total += p[size_t(r * cols + k)];
        EXPECT_NEAR(total, 1.0, 1e-5);
      }
    }
  });
}

// Backward: dot products of <= 1023 terms, then one subtract/multiply. The errors are
// absolute, relative to Σ|y·dy| and |dy|: we allow 16 ulp or (8 + cols/8)·eps absolute
// (|y|, |dy| <= 1 here).
TEST(Softmax, BackwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : kOddSizes)
      for (int64_t cols : kOddSizes) {
        if (rows * cols > 70000) continue;
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
        const Case c = make_case(rows, cols, seed_for(10, rows, cols));
        auto lengths = random_ints(rows, seed_for(11, cols), 0, cols);
        const SoftmaxMask mask{lengths.data(), nullptr, 0};
        const auto dy = random_floats(rows * cols, seed_for(12, rows, cols));
        const Tolerance tol{0, (8 + double(cols) / 8) * kEps, 16};
        for (bool log_space : {false, true}) {
          std::vector<float> y(c.x.size()), got(c.x.size());
          std::vector<double> want(c.x.size());
          if (log_space)
            log_softmax_rows(c.x.data(), y.data(), rows, cols, mask);
          else
            softmax_rows(c.x.data(), y.data(), rows, cols, mask);
          const auto yd = testing::to_double(y), dyd = testing::to_double(dy);
          if (log_space) {
            log_softmax_rows_backward(y.data(), dy.data(), got.data(), rows, cols);
            ref::log_softmax_rows_backward(yd.data(), dyd.data(), want.data(), rows, cols);
          } else {
            softmax_rows_backward(y.data(), dy.data(), got.data(), rows, cols);
            ref::softmax_rows_backward(yd.data(), dyd.data(), want.data(), rows, cols);
          }
          EXPECT_TRUE(all_close(got, testing::to_float(want), tol)) << "log " << log_space;
          for (size_t i = 0; i < got.size(); ++i) {
            if (y[i] == 0.0f || y[i] == -kInf) {
              ASSERT_EQ(got[i], 0.0f) << "masked grad at " << i;
            }
          }
          std::vector<float> inplace = dy;  // dx aliases dy
          if (log_space)
            log_softmax_rows_backward(y.data(), inplace.data(), inplace.data(), rows, cols);
          else
            softmax_rows_backward(y.data(), inplace.data(), inplace.data(), rows, cols);
          EXPECT_TRUE(bitwise_equal(inplace, got)) << "in place, log " << log_space;
        }
      }
  });
}

TEST(Softmax, BitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  const int64_t rows = 513, cols = 1023;
  const Case c = make_case(rows, cols, 13);
  const auto dy = random_floats(rows * cols, 14);
  const auto lengths = random_ints(rows, 15, 0, cols + 2);
  auto run = [&](int threads) {
    set_num_threads(threads);
    const SoftmaxMask mask{lengths.data(), nullptr, 0};
    std::vector<float> y(c.x.size()), ly(c.x.size()), dx(c.x.size()), ldx(c.x.size());
    softmax_rows(c.x.data(), y.data(), rows, cols, mask);
    log_softmax_rows(c.x.data(), ly.data(), rows, cols, mask);
    softmax_rows_backward(y.data(), dy.data(), dx.data(), rows, cols);
    log_softmax_rows_backward(ly.data(), dy.data(), ldx.data(), rows, cols);
    for (auto* v : {&ly, &dx, &ldx}) y.insert(y.end(), v->begin(), v->end());
    return y;
  };
  for_each_simd_target([&](const SimdTarget&) {
    const auto one = run(1);
    const auto two = run(2);
    EXPECT_TRUE(bitwise_equal(one, two));
  });
  set_num_threads(saved);
}

}  // namespace
}  // namespace qkv::kernels
