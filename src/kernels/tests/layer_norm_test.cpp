#include "qkv/kernels/layer_norm.h"

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
using testing::to_double;
using testing::to_float;
using testing::Tolerance;

constexpr double kEps = std::numeric_limits<float>::epsilon();

struct Inputs {
  int64_t rows, cols;
  std::vector<float> x, gamma, beta, dy;
};

// x has a nonzero mean (offset 3) so the variance pass is not trivially centred.
Inputs make_inputs(int64_t rows, int64_t cols, uint32_t seed) {
  Inputs in{rows,
            cols,
            random_floats(rows * cols, seed, 2, 4),
            random_floats(cols, seed + 1, 0.5f, 1.5f),
            random_floats(cols, seed + 2, -1, 1),
            random_floats(rows * cols, seed + 3, -1, 1)};
  return in;
}

struct Outputs {
  std::vector<float> y, mean, rstd, dx, dgamma, dbeta;
};

Outputs run_kernel(const Inputs& in) {
  Outputs o{std::vector<float>(in.x.size()),           std::vector<float>(size_t(in.rows)),
            std::vector<float>(size_t(in.rows)),       std::vector<float>(in.x.size()),
            std::vector<float>(size_t(in.cols), 7.0f), std::vector<float>(size_t(in.cols), 7.0f)};
  const LayerNormSize size{in.rows, in.cols, 1e-5f};
  layer_norm_forward(in.x.data(), in.gamma.data(), in.beta.data(), o.y.data(), o.mean.data(),
                     o.rstd.data(), size);
  layer_norm_backward(in.dy.data(), in.x.data(), in.gamma.data(), o.mean.data(), o.rstd.data(),
                      {o.dx.data(), o.dgamma.data(), o.dbeta.data()}, size);
  return o;
}

// The double reference, on the same float inputs. Backward uses the kernel's own saved
// mean/rstd (as autograd would), so only the backward arithmetic is compared.
Outputs run_reference(const Inputs& in, const Outputs& kernel) {
  const auto x = to_double(in.x), g = to_double(in.gamma), b = to_double(in.beta),
             dy = to_double(in.dy);
  std::vector<double> y(x.size()), mean(static_cast<size_t>(in.rows)),
      rstd(static_cast<size_t>(in.rows));
  const LayerNormSizeT<double> size{in.rows, in.cols, 1e-5};
  ref::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(), rstd.data(), size);
  const auto km = to_double(kernel.mean), kr = to_double(kernel.rstd);
  std::vector<double> dx(x.size()), dgamma(static_cast<size_t>(in.cols)),
      dbeta(static_cast<size_t>(in.cols));
  ref::layer_norm_backward(dy.data(), x.data(), g.data(), km.data(), kr.data(),
                           {dx.data(), dgamma.data(), dbeta.data()}, size);
  return {to_float(y),  to_float(mean),   to_float(rstd),
          to_float(dx), to_float(dgamma), to_float(dbeta)};
}

// Tolerances. x ∈ [2, 4): float sums of <= 1023 terms in lane chains keep the mean
// within ~cols·u relative, and the centred second pass makes var accurate to a few ulp
// plus the mean's error squared. y = xhat·gamma + beta is O(1), so its error is absolute:
// ~(8 + cols/16)·eps (xhat ~ ±1.7 carries mean/rstd errors times rstd ~ 1.7).
// Backward: dx = rstd·(g − mean(g) − xhat·mean(g·xhat)) with row means of <= 1023
// terms: absolute (16 + cols/8)·eps·rstd. dgamma/dbeta are float sums over rows, as in
// the reference, so (rows + 2)·eps·Σ|terms| — Σ|dy·xhat| <= 2·rows here.
TEST(LayerNorm, ForwardBackwardAtOddShapes) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : kOddSizes)
      for (int64_t cols : kOddSizes) {
        if (rows * cols > 70000) continue;
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
        const Inputs in = make_inputs(rows, cols, seed_for(1, rows, cols));
        const Outputs got = run_kernel(in);
        const Outputs want = run_reference(in, got);
        const double c = double(cols), r = double(rows);
        EXPECT_TRUE(all_close(got.mean, want.mean, {4 * kEps, 0, 4}));
        EXPECT_TRUE(all_close(got.rstd, want.rstd, {(8 + c / 8) * kEps, 0, 8}));
        EXPECT_TRUE(all_close(got.y, want.y, {0, (8 + c / 16) * kEps, 8}));
        EXPECT_TRUE(all_close(got.dx, want.dx, {0, (16 + c / 8) * kEps * 2, 8}));
        EXPECT_TRUE(all_close(got.dgamma, want.dgamma, {0, (r + 2) * kEps * 2 * r, 8}));
        EXPECT_TRUE(all_close(got.dbeta, want.dbeta, {0, (r + 2) * kEps * r, 8}));
      }
  });
}

// accumulate_dx adds the gradient to what dx holds: bitwise dx_before + the overwritten
// result (one rounding, as adding a separate tensor), on every target and in the twin;
// dgamma and dbeta are overwritten as without it.
TEST(LayerNorm, AccumulateDxAddsToWhatDxHolds) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : {1, 63, 64, 65, 200})
      for (int64_t cols : {1, 7, 16, 33, 256}) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
        const Inputs in = make_inputs(rows, cols, seed_for(4, rows, cols));
        const Outputs fresh = run_kernel(in);
        const std::vector<float> before =
            random_floats(rows * cols, seed_for(5, rows, cols), -2, 2);
        std::vector<float> dx = before, dgamma(static_cast<size_t>(cols), 7.0f),
                           dbeta(static_cast<size_t>(cols), 7.0f);
        layer_norm_backward(in.dy.data(), in.x.data(), in.gamma.data(), fresh.mean.data(),
                            fresh.rstd.data(), {dx.data(), dgamma.data(), dbeta.data(), true},
                            {rows, cols, 1e-5f});
        std::vector<float> want(before.size());
        for (size_t i = 0; i < want.size(); ++i) want[i] = before[i] + fresh.dx[i];
        EXPECT_TRUE(bitwise_equal(dx, want));
        EXPECT_TRUE(bitwise_equal(dgamma, fresh.dgamma));
        EXPECT_TRUE(bitwise_equal(dbeta, fresh.dbeta));
        // The twin: the same rule in its own precision.
        const auto xd = to_double(in.x), gd = to_double(in.gamma), dyd = to_double(in.dy),
                   md = to_double(fresh.mean), rd = to_double(fresh.rstd);
        std::vector<double> dx0(xd.size()), dx1 = to_double(before), dg(static_cast<size_t>(cols)),
                                            db(static_cast<size_t>(cols));
        const LayerNormSizeT<double> size{rows, cols, 1e-5};
        ref::layer_norm_backward(dyd.data(), xd.data(), gd.data(), md.data(), rd.data(),
                                 {dx0.data(), dg.data(), db.data()}, size);
        ref::layer_norm_backward(dyd.data(), xd.data(), gd.data(), md.data(), rd.data(),
                                 {dx1.data(), dg.data(), db.data(), true}, size);
        for (size_t i = 0; i < dx0.size(); ++i)
          ASSERT_EQ(dx1[i], double(before[i]) + dx0[i]) << "reference, element " << i;
      }
  });
}

// Constant rows (variance 0) normalise to beta exactly: rstd = 1/sqrt(eps), xhat = 0.
TEST(LayerNorm, ConstantRowGivesBeta) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t cols : kOddSizes) {
      Inputs in = make_inputs(2, cols, seed_for(2, cols));
      std::fill(in.x.begin(), in.x.end(), 0.25f);
      const Outputs got = run_kernel(in);
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(got.y[size_t(r * cols + c)], in.beta[size_t(c)]);
      EXPECT_FLOAT_EQ(got.rstd[0], float(1.0 / std::sqrt(1e-5)));
      for (float v : got.dx) ASSERT_TRUE(std::isfinite(v));
    }
  });
}

// y may alias x (in-place forward); dx may alias dy: with one block of rows and with
// several (backward sums the parameter gradients per 64-row block, a tail block last).
TEST(LayerNorm, InPlace) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : {int64_t{9}, int64_t{150}})
      for (int64_t cols : {int64_t{17}, int64_t{64}, int64_t{1023}}) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
        const Inputs in = make_inputs(rows, cols, seed_for(3, rows, cols));
        const Outputs got = run_kernel(in);
        const LayerNormSize size{in.rows, in.cols, 1e-5f};
        std::vector<float> y = in.x, mean(static_cast<size_t>(rows)),
                           rstd(static_cast<size_t>(rows));
        layer_norm_forward(y.data(), in.gamma.data(), in.beta.data(), y.data(), mean.data(),
                           rstd.data(), size);
        EXPECT_TRUE(bitwise_equal(y, got.y));
        std::vector<float> d = in.dy, dgamma(static_cast<size_t>(cols)),
                           dbeta(static_cast<size_t>(cols));
        layer_norm_backward(d.data(), in.x.data(), in.gamma.data(), mean.data(), rstd.data(),
                            {d.data(), dgamma.data(), dbeta.data()}, size);
        EXPECT_TRUE(bitwise_equal(d, got.dx));
        EXPECT_TRUE(bitwise_equal(dgamma, got.dgamma));
        EXPECT_TRUE(bitwise_equal(dbeta, got.dbeta));
      }
  });
}

TEST(LayerNorm, ZeroRowsZeroesParameterGrads) {
  for_each_simd_target([](const SimdTarget&) {
    std::vector<float> dgamma(5, 3.0f), dbeta(5, 3.0f);
    const float dummy = 0;
    float dx = 0;
    layer_norm_backward(&dummy, &dummy, &dummy, &dummy, &dummy, {&dx, dgamma.data(), dbeta.data()},
                        {0, 5, 1e-5f});
    for (float v : dgamma) EXPECT_EQ(v, 0.0f);
    for (float v : dbeta) EXPECT_EQ(v, 0.0f);
  });
}

// Shapes big enough for both the row-parallel and the column-parallel passes: results
// (dgamma and dbeta included) must be bitwise identical for 1 and 2 threads.
TEST(LayerNorm, BitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  const Inputs in = make_inputs(700, 1023, 4);
  auto run = [&](int threads) {
    set_num_threads(threads);
    Outputs o = run_kernel(in);
    for (auto* v : {&o.mean, &o.rstd, &o.dx, &o.dgamma, &o.dbeta})
      o.y.insert(o.y.end(), v->begin(), v->end());
    return o.y;
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
