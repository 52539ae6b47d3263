#include "qkv/kernels/elementwise.h"

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
using testing::seed_for;
using testing::Tolerance;

constexpr double kEps = std::numeric_limits<float>::epsilon();  // 2^-23

// add/sub/mul/scale are single IEEE operations: the kernels must match the reference
// bit for bit on every target.
TEST(Elementwise, BinaryOpsExactAtOddSizes) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t n : kOddSizes) {
      SCOPED_TRACE(n);
      const auto a = random_floats(n, seed_for(1, n), -10, 10);
      const auto b = random_floats(n, seed_for(2, n), -10, 10);
      std::vector<float> got(a.size()), want(a.size());
      add(a.data(), b.data(), got.data(), n);
      ref::add(a.data(), b.data(), want.data(), n);
      EXPECT_TRUE(bitwise_equal(got, want));
      sub(a.data(), b.data(), got.data(), n);
      ref::sub(a.data(), b.data(), want.data(), n);
      EXPECT_TRUE(bitwise_equal(got, want));
      mul(a.data(), b.data(), got.data(), n);
      ref::mul(a.data(), b.data(), want.data(), n);
      EXPECT_TRUE(bitwise_equal(got, want));
      scale(a.data(), -1.75f, got.data(), n);
      ref::scale(a.data(), -1.75f, want.data(), n);
      EXPECT_TRUE(bitwise_equal(got, want));
    }
  });
}

TEST(Elementwise, InPlace) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t n : kOddSizes) {
      const auto a = random_floats(n, seed_for(3, n));
      const auto b = random_floats(n, seed_for(4, n));
      std::vector<float> want(a.size());
      ref::add(a.data(), b.data(), want.data(), n);
      std::vector<float> y = a;
      add(y.data(), b.data(), y.data(), n);  // y = y + b
      EXPECT_TRUE(bitwise_equal(y, want));
      ref::mul(a.data(), a.data(), want.data(), n);
      y = a;
      mul(y.data(), y.data(), y.data(), n);  // all three alias
      EXPECT_TRUE(bitwise_equal(y, want));
      ref::scale(a.data(), 3.0f, want.data(), n);
      y = a;
      scale(y.data(), 3.0f, y.data(), n);
      EXPECT_TRUE(bitwise_equal(y, want));
    }
  });
}

// axpy may fuse alpha·x + y into one rounding (FMA targets) where the reference rounds
// twice, so compare with the exact value (computed in double): either way the error is
// at most one rounding of the product plus one of the sum, eps·(|alpha·x| + |y|).
TEST(Elementwise, AxpyWithinTwoRoundings) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t n : kOddSizes) {
      SCOPED_TRACE(n);
      const auto x = random_floats(n, seed_for(5, n), -4, 4);
      const auto y0 = random_floats(n, seed_for(6, n), -4, 4);
      std::vector<float> y = y0;
      const float alpha = 0.37f;
      axpy(alpha, x.data(), y.data(), n);
      for (size_t i = 0; i < y.size(); ++i) {
        const double exact = double(alpha) * x[i] + y0[i];
        const double bound = kEps * (std::fabs(double(alpha) * x[i]) + std::fabs(y0[i]));
        ASSERT_LE(std::fabs(y[i] - exact), bound) << "at " << i;
      }
    }
  });
}

TEST(Elementwise, AddBiasRowsByCols) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : kOddSizes)
      for (int64_t cols : kOddSizes) {
        if (rows * cols > 100000) continue;  // 1023 x 1023 adds nothing but time
        SCOPED_TRACE(testing::seed_for(rows, cols));
        const auto x = random_floats(rows * cols, seed_for(7, rows, cols));
        const auto bias = random_floats(cols, seed_for(8, cols));
        std::vector<float> got(x.size()), want(x.size());
        add_bias(x.data(), bias.data(), got.data(), rows, cols);
        ref::add_bias(x.data(), bias.data(), want.data(), rows, cols);
        ASSERT_TRUE(bitwise_equal(got, want)) << rows << " x " << cols;
        add_bias(got.data(), bias.data(), got.data(), rows, cols);  // in place
        ref::add_bias(want.data(), bias.data(), want.data(), rows, cols);
        ASSERT_TRUE(bitwise_equal(got, want)) << rows << " x " << cols << " in place";
      }
  });
}

// Activation tolerances, against the reference evaluated in double on the same float
// inputs (so the reference error is ~0.5 ulp). Measured worst over 2e5 inputs in
// [−10, 10] on AVX3/AVX2/SCALAR in brackets.
//  - Relu: exact.
//  - Tanh: Highway's Tanh is expm1-based: 4 ulp, or 2 eps absolute near 0 [3 ulp].
//  - Sigmoid: exp (<= 1 ulp in Highway) + add + divide: 4 ulp [3 ulp].
//  - Gelu: x·sigmoid(2u); the argument 2u carries a few ulp of relative error, which the
//    sigmoid's tail amplifies by |2u|·(1 − s) (~16 at x = −8): relative 64 eps [17 eps],
//    plus 4 eps absolute for results that underflow towards 0 next to x.
Tolerance forward_tolerance(Activation f) {
  switch (f) {
    case Activation::Relu:
      return {};
    case Activation::Tanh:
      return {0, 2 * kEps, 4};
    case Activation::Sigmoid:
      return {0, 0, 4};
    case Activation::Gelu:
      return {64 * kEps, 4 * kEps, 4};
  }
  return {};
}

constexpr Activation kAll[] = {Activation::Tanh, Activation::Sigmoid, Activation::Relu,
                               Activation::Gelu};

// Inputs spanning the interesting ranges plus exact specials (0, ±tiny, ±large).
std::vector<float> activation_inputs(int64_t n, uint32_t seed) {
  auto x = random_floats(n, seed, -8, 8);
  const float specials[] = {0.0f,  -0.0f,  1e-20f, -1e-20f, 1e-4f, -1e-4f,
                            20.0f, -20.0f, 88.0f,  -88.0f,  1e30f, -1e30f};
  for (size_t i = 0; i < x.size() && i < std::size(specials); ++i)
    x[i * 7 % x.size()] = specials[i];
  return x;
}

TEST(Elementwise, ActivationForwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (Activation f : kAll)
      for (int64_t n : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << "activation " << int(f) << " n " << n);
        const auto x = activation_inputs(n, seed_for(9, n));
        std::vector<float> got(x.size());
        activation_forward(f, x.data(), got.data(), n);
        const auto xd = testing::to_double(x);
        std::vector<double> want(xd.size());
        ref::activation_forward(f, xd.data(), want.data(), n);
        EXPECT_TRUE(all_close(got, testing::to_float(want), forward_tolerance(f)));
        std::vector<float> y = x;
        activation_forward(f, y.data(), y.data(), n);  // in place
        EXPECT_TRUE(bitwise_equal(y, got));
      }
  });
}

// Backward: tanh'/sigmoid' are a couple of roundings on y: 4 ulp, plus an absolute
// 2 eps·|dy| floor where 1 − y² cancels (the SCALAR target has no FMA) [0.6 eps abs];
// relu' is exact; gelu' combines the sigmoid above with a polynomial in x: relative
// 64 eps, absolute 16 eps where its two terms cancel near x ≈ −0.75 [1.9 eps abs].
Tolerance backward_tolerance(Activation f) {
  switch (f) {
    case Activation::Relu:
      return {};
    case Activation::Tanh:
    case Activation::Sigmoid:
      return {0, 2 * kEps, 4};
    case Activation::Gelu:
      return {64 * kEps, 16 * kEps, 4};
  }
  return {};
}

TEST(Elementwise, ActivationBackwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (Activation f : kAll)
      for (int64_t n : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << "activation " << int(f) << " n " << n);
        const auto x = activation_inputs(n, seed_for(10, n));
        const auto dy = random_floats(n, seed_for(11, n));
        std::vector<float> y(x.size()), got(x.size());
        ref::activation_forward(f, x.data(), y.data(), n);
        activation_backward(f, x.data(), y.data(), dy.data(), got.data(), n);
        std::vector<double> want(x.size());
        const auto xd = testing::to_double(x), yd = testing::to_double(y),
                   dyd = testing::to_double(dy);
        ref::activation_backward(f, xd.data(), yd.data(), dyd.data(), want.data(), n);
        EXPECT_TRUE(all_close(got, testing::to_float(want), backward_tolerance(f)));
        std::vector<float> inplace = dy;  // dx aliases dy
        activation_backward(f, x.data(), y.data(), inplace.data(), inplace.data(), n);
        EXPECT_TRUE(bitwise_equal(inplace, got));
      }
  });
}

TEST(Elementwise, NoNaNOrOverflowAtExtremes) {
  for_each_simd_target([](const SimdTarget&) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> x = {-inf, -1e38f, -104.f, -90.f, 90.f, 104.f, 1e38f, inf};
    const int64_t n = int64_t(x.size());
    std::vector<float> y(x.size()), dx(x.size());
    const std::vector<float> dy(x.size(), 1.0f);
    for (Activation f : {Activation::Tanh, Activation::Sigmoid, Activation::Gelu}) {
      activation_forward(f, x.data(), y.data(), n);
      activation_backward(f, x.data(), y.data(), dy.data(), dx.data(), n);
      for (size_t i = 1; i + 1 < x.size(); ++i) {  // finite inputs
        EXPECT_FALSE(std::isnan(y[i])) << int(f) << " x=" << x[i];
        EXPECT_FALSE(std::isnan(dx[i])) << int(f) << " x=" << x[i];
      }
      // ±inf inputs: tanh and sigmoid saturate. (gelu(−inf) = −inf·0 is NaN in the
      // reference formula too, so it is not checked.)
      if (f != Activation::Gelu) {
        EXPECT_FALSE(std::isnan(y.front()) || std::isnan(y.back())) << int(f);
      }
    }
    activation_forward(Activation::Sigmoid, x.data(), y.data(), n);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[6], 1.0f);
    activation_forward(Activation::Tanh, x.data(), y.data(), n);
    EXPECT_EQ(y[1], -1.0f);
    EXPECT_EQ(y[6], 1.0f);
  });
}

// Large inputs are split over the pool in size-determined chunks: results must not
// depend on the thread count.
TEST(Elementwise, BitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  const int64_t n = (int64_t{1} << 17) + 5;
  const auto x = random_floats(n, 12, -6, 6);
  const auto dy = random_floats(n, 13);
  auto run = [&](int threads) {
    set_num_threads(threads);
    std::vector<float> y(x.size()), dx(x.size()), s(x.size());
    activation_forward(Activation::Gelu, x.data(), y.data(), n);
    activation_backward(Activation::Gelu, x.data(), y.data(), dy.data(), dx.data(), n);
    add(x.data(), dy.data(), s.data(), n);
    axpy(0.5f, x.data(), s.data(), n);
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), s.begin(), s.end());
    return y;
  };
  const auto one = run(1);
  const auto two = run(2);
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(one, two));
}

TEST(Elementwise, EmptyIsNoOp) {
  float a = 1, b = 2, y = 7;
  add(&a, &b, &y, 0);
  activation_forward(Activation::Gelu, &a, &y, 0);
  add_bias(&a, &b, &y, 0, 5);
  EXPECT_EQ(y, 7.0f);
}

}  // namespace
}  // namespace qkv::kernels
