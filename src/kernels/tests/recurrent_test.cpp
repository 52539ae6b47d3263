// Fused GRU / LSTM cell kernels and the masked blend against their reference twins, on
// every SIMD target, at odd hidden sizes (vector tails) and several batch sizes.
#include "qkv/kernels/recurrent.h"

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

constexpr double kEps = std::numeric_limits<float>::epsilon();  // 2^-23
constexpr int64_t kBatches[] = {1, 3};

// Tolerances against the reference run in double on the same float inputs. Each output
// is a short chain of σ/tanh (4 ulp each in Highway, see elementwise_test.cpp) and a
// few roundings; an error in a gate enters the output multiplied by values of O(1) with
// these inputs (|pre-activations| <= 4, |h|, |c| <= 2), so the absolute error is a
// small multiple of eps. Measured worst over AVX3/AVX2/SCALAR, B in {1, 3, 8} and the odd
// sizes: 3.3 eps forward (SCALAR, no FMA), 1.4 eps backward; 8 eps leaves a factor >= 2.4.
const Tolerance kForward{0, 8 * kEps, 4};
const Tolerance kBackward{0, 8 * kEps, 4};

struct GruCase {
  CellSize size;
  std::vector<float> gx, gh, h, dh_new;
};

GruCase gru_case(int64_t batch, int64_t hidden, uint32_t salt) {
  const int64_t n = batch * hidden;
  return {{batch, hidden},
          random_floats(3 * n, seed_for(salt, batch, hidden), -2, 2),
          random_floats(3 * n, seed_for(salt + 1, batch, hidden), -2, 2),
          random_floats(n, seed_for(salt + 2, batch, hidden), -2, 2),
          random_floats(n, seed_for(salt + 3, batch, hidden), -1, 1)};
}

TEST(GruCell, ForwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t batch : kBatches)
      for (int64_t hidden : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << "B " << batch << " H " << hidden);
        const GruCase c = gru_case(batch, hidden, 1);
        std::vector<float> h_new(c.h.size()), gates(c.gx.size());
        gru_cell_forward(c.gx.data(), c.gh.data(), c.h.data(), h_new.data(), gates.data(), c.size);
        const auto gx = to_double(c.gx), gh = to_double(c.gh), h = to_double(c.h);
        std::vector<double> want_h(h.size()), want_gates(gx.size());
        ref::gru_cell_forward(gx.data(), gh.data(), h.data(), want_h.data(), want_gates.data(),
                              c.size);
        EXPECT_TRUE(all_close(h_new, to_float(want_h), kForward));
        EXPECT_TRUE(all_close(gates, to_float(want_gates), kForward));
      }
  });
}

TEST(GruCell, BackwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t batch : kBatches)
      for (int64_t hidden : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << "B " << batch << " H " << hidden);
        const GruCase c = gru_case(batch, hidden, 5);
        std::vector<float> h_new(c.h.size()), gates(c.gx.size());
        ref::gru_cell_forward(c.gx.data(), c.gh.data(), c.h.data(), h_new.data(), gates.data(),
                              c.size);
        std::vector<float> dgx(c.gx.size()), dgh(c.gx.size()), dh(c.h.size());
        gru_cell_backward(c.dh_new.data(), {c.gh.data(), c.h.data(), gates.data()},
                          {dgx.data(), dgh.data(), dh.data()}, c.size);
        const auto dy = to_double(c.dh_new), gh = to_double(c.gh), h = to_double(c.h),
                   g = to_double(gates);
        std::vector<double> wdgx(dgx.size()), wdgh(dgh.size()), wdh(dh.size());
        ref::gru_cell_backward(dy.data(), {gh.data(), h.data(), g.data()},
                               {wdgx.data(), wdgh.data(), wdh.data()}, c.size);
        EXPECT_TRUE(all_close(dgx, to_float(wdgx), kBackward));
        EXPECT_TRUE(all_close(dgh, to_float(wdgh), kBackward));
        EXPECT_TRUE(all_close(dh, to_float(wdh), kBackward));
      }
  });
}

struct LstmCase {
  CellSize size;
  std::vector<float> gx, gh, c, dh_new, dc_new;
};

LstmCase lstm_case(int64_t batch, int64_t hidden, uint32_t salt) {
  const int64_t n = batch * hidden;
  return {{batch, hidden},
          random_floats(4 * n, seed_for(salt, batch, hidden), -2, 2),
          random_floats(4 * n, seed_for(salt + 1, batch, hidden), -2, 2),
          random_floats(n, seed_for(salt + 2, batch, hidden), -2, 2),
          random_floats(n, seed_for(salt + 3, batch, hidden), -1, 1),
          random_floats(n, seed_for(salt + 4, batch, hidden), -1, 1)};
}

TEST(LstmCell, ForwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t batch : kBatches)
      for (int64_t hidden : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << "B " << batch << " H " << hidden);
        const LstmCase c = lstm_case(batch, hidden, 11);
        std::vector<float> h(c.c.size()), cn(c.c.size()), gates(c.gx.size());
        lstm_cell_forward(c.gx.data(), c.gh.data(), c.c.data(), {h.data(), cn.data(), gates.data()},
                          c.size);
        const auto gx = to_double(c.gx), gh = to_double(c.gh), cd = to_double(c.c);
        std::vector<double> wh(h.size()), wc(cn.size()), wg(gates.size());
        ref::lstm_cell_forward(gx.data(), gh.data(), cd.data(), {wh.data(), wc.data(), wg.data()},
                               c.size);
        EXPECT_TRUE(all_close(h, to_float(wh), kForward));
        EXPECT_TRUE(all_close(cn, to_float(wc), kForward));
        EXPECT_TRUE(all_close(gates, to_float(wg), kForward));
      }
  });
}

TEST(LstmCell, BackwardMatchesReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t batch : kBatches)
      for (int64_t hidden : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << "B " << batch << " H " << hidden);
        const LstmCase c = lstm_case(batch, hidden, 17);
        std::vector<float> h(c.c.size()), cn(c.c.size()), gates(c.gx.size());
        ref::lstm_cell_forward(c.gx.data(), c.gh.data(), c.c.data(),
                               {h.data(), cn.data(), gates.data()}, c.size);
        std::vector<float> dgates(gates.size()), dc(c.c.size());
        lstm_cell_backward(c.dh_new.data(), c.dc_new.data(), {c.c.data(), cn.data(), gates.data()},
                           {dgates.data(), dc.data()}, c.size);
        const auto dh = to_double(c.dh_new), dcn = to_double(c.dc_new), cd = to_double(c.c),
                   cnd = to_double(cn), g = to_double(gates);
        std::vector<double> wdg(dgates.size()), wdc(dc.size());
        ref::lstm_cell_backward(dh.data(), dcn.data(), {cd.data(), cnd.data(), g.data()},
                                {wdg.data(), wdc.data()}, c.size);
        EXPECT_TRUE(all_close(dgates, to_float(wdg), kBackward));
        EXPECT_TRUE(all_close(dc, to_float(wdc), kBackward));
      }
  });
}

// Saturated pre-activations (|a| up to 1e30) give gates of exactly 0 or 1 and finite
// states and gradients: no exp overflow, no inf·0.
TEST(RecurrentCells, SaturatedInputsStayFinite) {
  for_each_simd_target([](const SimdTarget&) {
    const CellSize size{2, 17};
    const int64_t n = size.batch * size.hidden;
    std::vector<float> gx = random_floats(4 * n, 1, -1, 1), gh(size_t(4 * n), 0.0f);
    const float specials[] = {100.0f, -100.0f, 1e30f, -1e30f, 88.0f, -88.0f};
    for (size_t i = 0; i < gx.size(); ++i)
      if (i % 3 == 0) gx[i] = specials[i % std::size(specials)];
    const std::vector<float> state = random_floats(n, 2, -1, 1), dy = random_floats(n, 3, -1, 1);
    std::vector<float> h(static_cast<size_t>(n)), c(static_cast<size_t>(n)),
        gates(static_cast<size_t>(4 * n)), d1(static_cast<size_t>(4 * n)),
        d2(static_cast<size_t>(4 * n)), d3(static_cast<size_t>(n));
    gru_cell_forward(gx.data(), gh.data(), state.data(), h.data(), gates.data(), size);
    gru_cell_backward(dy.data(), {gh.data(), state.data(), gates.data()},
                      {d1.data(), d2.data(), d3.data()}, size);
    for (float v : h) ASSERT_TRUE(std::isfinite(v) && std::abs(v) <= 1.0f) << v;
    for (size_t i = 0; i < size_t(3 * n); ++i)
      ASSERT_TRUE(std::isfinite(d1[i]) && std::isfinite(d2[i])) << i;
    lstm_cell_forward(gx.data(), gh.data(), state.data(), {h.data(), c.data(), gates.data()}, size);
    lstm_cell_backward(dy.data(), dy.data(), {state.data(), c.data(), gates.data()},
                       {d1.data(), d3.data()}, size);
    for (size_t i = 0; i < gates.size(); ++i) {
      ASSERT_TRUE(gates[i] >= -1.0f && gates[i] <= 1.0f) << i;
      ASSERT_TRUE(std::isfinite(d1[i])) << i;
    }
    for (size_t i = 0; i < size_t(n); ++i)
      ASSERT_TRUE(std::isfinite(h[i]) && std::isfinite(c[i]) && std::isfinite(d3[i])) << i;
  });
}

// The cell's copy mode: where the update gate saturates to z = 1, the state passes
// through exactly (n + z·(h − n) = h, which (1 − z)·n + z·h would not guarantee).
TEST(GruCell, SaturatedUpdateGateKeepsTheState) {
  for_each_simd_target([](const SimdTarget&) {
    const CellSize size{1, 33};
    std::vector<float> gx(99, 0.0f), gh(99, 0.0f);
    for (int j = 33; j < 66; ++j) gx[size_t(j)] = 200.0f;  // z = σ(200) = 1 in float
    const std::vector<float> h = random_floats(33, 4, -1, 1);
    std::vector<float> h_new(33), gates(99);
    gru_cell_forward(gx.data(), gh.data(), h.data(), h_new.data(), gates.data(), size);
    EXPECT_TRUE(bitwise_equal(h_new, h));
  });
}

TEST(MaskedBlend, SelectsRowsExactlyAndRoutesGradients) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t rows : {1, 5})
      for (int64_t cols : kOddSizes) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
        const int64_t n = rows * cols;
        std::vector<float> a = random_floats(n, seed_for(20, rows, cols));
        const std::vector<float> b = random_floats(n, seed_for(21, rows, cols));
        std::vector<float> mask(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) mask[size_t(r)] = float((r * 7 + cols) % 2);
        // A NaN in a row that is not selected must not reach the output.
        for (int64_t r = 0; r < rows; ++r)
          if (mask[size_t(r)] == 0.0f) a[size_t(r * cols)] = std::nanf("");
        std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
        masked_blend_forward(a.data(), b.data(), mask.data(), got.data(), rows, cols);
        ref::masked_blend_forward(a.data(), b.data(), mask.data(), want.data(), rows, cols);
        ASSERT_TRUE(bitwise_equal(got, want));
        for (float v : got) ASSERT_FALSE(std::isnan(v));
        std::vector<float> inplace = b;  // y aliases b
        masked_blend_forward(a.data(), inplace.data(), mask.data(), inplace.data(), rows, cols);
        EXPECT_TRUE(bitwise_equal(inplace, want));

        std::vector<float> da(size_t(n), 9.0f), db(size_t(n), 9.0f), wda(static_cast<size_t>(n)),
            wdb(static_cast<size_t>(n));
        masked_blend_backward(b.data(), mask.data(), da.data(), db.data(), rows, cols);
        ref::masked_blend_backward(b.data(), mask.data(), wda.data(), wdb.data(), rows, cols);
        EXPECT_TRUE(bitwise_equal(da, wda));
        EXPECT_TRUE(bitwise_equal(db, wdb));
      }
  });
}

// Rows are split over the pool (B·G·H well above the grain); every row's result is
// computed alone, so 1 and 2 threads agree bit for bit.
TEST(RecurrentCells, SameForOneAndTwoThreads) {
  const CellSize size{64, 257};
  const int64_t n = size.batch * size.hidden;
  const auto gx = random_floats(4 * n, 30), gh = random_floats(4 * n, 31);
  const auto state = random_floats(n, 32), dy = random_floats(n, 33);
  const int saved = num_threads();
  std::vector<float> out[2];
  for (int t : {1, 2}) {
    set_num_threads(t);
    std::vector<float> h(static_cast<size_t>(n)), c(static_cast<size_t>(n)),
        g(static_cast<size_t>(4 * n)), d1(static_cast<size_t>(4 * n)),
        d2(static_cast<size_t>(4 * n)), d3(static_cast<size_t>(n));
    gru_cell_forward(gx.data(), gh.data(), state.data(), h.data(), g.data(), size);
    gru_cell_backward(dy.data(), {gh.data(), state.data(), g.data()},
                      {d1.data(), d2.data(), d3.data()}, size);
    out[t - 1] = h;
    out[t - 1].insert(out[t - 1].end(), d1.begin(), d1.begin() + 3 * n);
    out[t - 1].insert(out[t - 1].end(), d2.begin(), d2.begin() + 3 * n);
    lstm_cell_forward(gx.data(), gh.data(), state.data(), {h.data(), c.data(), g.data()}, size);
    lstm_cell_backward(dy.data(), dy.data(), {state.data(), c.data(), g.data()},
                       {d1.data(), d3.data()}, size);
    out[t - 1].insert(out[t - 1].end(), h.begin(), h.end());
    out[t - 1].insert(out[t - 1].end(), d1.begin(), d1.end());
    out[t - 1].insert(out[t - 1].end(), d3.begin(), d3.end());
  }
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(out[0], out[1]));
}

}  // namespace
}  // namespace qkv::kernels
