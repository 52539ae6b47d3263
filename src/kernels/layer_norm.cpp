// Layer normalisation forward and backward (see qkv/kernels/layer_norm.h), Highway
// dynamic dispatch.
//
// Forward, per row (two passes over x for a stable variance):
//   mean = Σx / n,  var = Σ(x − mean)² / n,  rstd = 1 / sqrt(var + eps),
//   y = (x − mean)·rstd·gamma + beta.
// Backward, with xhat = (x − mean)·rstd and g = dy·gamma:
//   dx = rstd·(g − mean_c(g) − xhat·mean_c(g·xhat))      -- row-parallel
//   dgamma = Σ_r dy·xhat,  dbeta = Σ_r dy                 -- column-parallel
// The column pass sums every column over the rows in row order, so dgamma/dbeta are
// deterministic for any thread count and need no per-thread scratch.
#include "qkv/kernels/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/detail/parallel_rows.h"
#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/layer_norm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/detail/for_spans-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements per parallel chunk (64 KiB of floats): rows are memory-bound.
constexpr int64_t kGrain = int64_t{1} << 14;

template <class F>
void ForRows(int64_t rows, int64_t cols, const F& f) {
  detail::parallel_rows(rows, cols, kGrain, f);
}

// Σ_c term(d, c) over [0, n): whole vectors into two accumulators (hides add
// latency), then a one-lane tail running the same ops.
template <class Term>
HWY_INLINE float RowSum(int64_t n, const Term& term) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  int64_t c = 0;
  for (; c + 2 * lanes <= n; c += 2 * lanes) {
    acc0 = hn::Add(acc0, term(d, c));
    acc1 = hn::Add(acc1, term(d, c + lanes));
  }
  for (; c + lanes <= n; c += lanes) acc0 = hn::Add(acc0, term(d, c));
  float tail = 0.0f;
  for (; c < n; ++c) tail += hn::GetLane(term(d1, c));
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1))) + tail;
}

// One pass computing Σ dev(d, c) and Σ dev(d, c)² over [0, n).
template <class Dev>
HWY_INLINE void RowSum2(int64_t n, const Dev& dev, float& sum, float& sum_sq) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  auto s = hn::Zero(d), q = hn::Zero(d);
  int64_t c = 0;
  for (; c + lanes <= n; c += lanes) {
    const auto v = dev(d, c);
    s = hn::Add(s, v);
    q = hn::MulAdd(v, v, q);
  }
  float s_tail = 0.0f, q_tail = 0.0f;
  for (; c < n; ++c) {
    const float v = hn::GetLane(dev(d1, c));
    s_tail += v;
    q_tail += v * v;
  }
  sum = hn::GetLane(hn::SumOfLanes(d, s)) + s_tail;
  sum_sq = hn::GetLane(hn::SumOfLanes(d, q)) + q_tail;
}

void ForwardImpl(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                 float* rstd, const LayerNormSize& size) {
  const int64_t cols = size.cols;
  if (cols <= 0) return;
  ForRows(size.rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float m0 =
          RowSum(cols, [&](auto d, int64_t c) { return hn::LoadU(d, xr + c); }) / float(cols);
      // Corrected two-pass variance (Chan, Golub & LeVeque 1983, eq. 1.7): with the
      // float mean m0 slightly off, Σ(x − m0) = n·(mean − m0) recovers the error, so
      //   mean = m0 + Σ(x − m0)/n,   var = Σ(x − m0)²/n − (Σ(x − m0)/n)².
      // This matters when |mean| >> std, where m0's error is amplified by rstd.
      float dev_sum, ss;
      auto dev = [&](auto d, int64_t c) { return hn::Sub(hn::LoadU(d, xr + c), hn::Set(d, m0)); };
      RowSum2(cols, dev, dev_sum, ss);
      const double shift = double(dev_sum) / double(cols);
      const float m = float(double(m0) + shift);
      const double var = std::max(double(ss) / double(cols) - shift * shift, 0.0);
      const float rs = float(1.0 / std::sqrt(var + double(size.eps)));
      mean[r] = m;
      rstd[r] = rs;
      // y may alias x: column c is read before it is written.
      ForSpans(cols, [&](auto d, int64_t c) {
        const auto xhat = hn::Mul(hn::Sub(hn::LoadU(d, xr + c), hn::Set(d, m)), hn::Set(d, rs));
        hn::StoreU(hn::MulAdd(xhat, hn::LoadU(d, gamma + c), hn::LoadU(d, beta + c)), d, yr + c);
      });
    }
  });
}

// dgamma[c0:c1], dbeta[c0:c1] over all rows, row by row: the outputs stay in L1 while
// dy and x stream through contiguously.
void ParamGradRange(const float* dy, const float* x, const float* mean, const float* rstd,
                    float* dgamma, float* dbeta, int64_t rows, int64_t cols, int64_t c0,
                    int64_t c1) {
  std::fill(dgamma + c0, dgamma + c1, 0.0f);
  std::fill(dbeta + c0, dbeta + c1, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    const float m = mean[r], rs = rstd[r];
    ForSpans(c1 - c0, [&](auto d, int64_t k) {
      const int64_t c = c0 + k;
      const auto vdy = hn::LoadU(d, dyr + c);
      const auto xhat = hn::Mul(hn::Sub(hn::LoadU(d, xr + c), hn::Set(d, m)), hn::Set(d, rs));
      hn::StoreU(hn::MulAdd(vdy, xhat, hn::LoadU(d, dgamma + c)), d, dgamma + c);
      hn::StoreU(hn::Add(hn::LoadU(d, dbeta + c), vdy), d, dbeta + c);
    });
  }
}

void BackwardImpl(const float* dy, const float* x, const float* gamma, const float* mean,
                  const float* rstd, LayerNormGrads<float> grads, const LayerNormSize& size) {
  const int64_t rows = std::max<int64_t>(size.rows, 0), cols = size.cols;
  if (cols <= 0) return;

  // Parameter gradients first, so that dx may alias dy (dy is not read after the row
  // pass has overwritten it). Column blocks of >= 64 floats, at most ~16 of them.
  const int64_t block = std::max<int64_t>(64, (cols / 16 + 15) / 16 * 16);
  auto param_fn = [&](int64_t c0, int64_t c1) {
    ParamGradRange(dy, x, mean, rstd, grads.dgamma, grads.dbeta, rows, cols, c0, c1);
  };
  if (rows * cols < 2 * kGrain || cols <= block)
    param_fn(0, cols);
  else
    parallel_for(0, cols, block, param_fn);

  float* dx = grads.dx;
  const float inv_n = 1.0f / float(cols);
  ForRows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      const float m = mean[r], rs = rstd[r];
      auto xhat_at = [&](auto d, int64_t c) {
        return hn::Mul(hn::Sub(hn::LoadU(d, xr + c), hn::Set(d, m)), hn::Set(d, rs));
      };
      auto g_at = [&](auto d, int64_t c) {
        return hn::Mul(hn::LoadU(d, dyr + c), hn::LoadU(d, gamma + c));
      };
      const float mean_g = RowSum(cols, g_at) * inv_n;
      const float mean_gx =
          RowSum(cols, [&](auto d, int64_t c) { return hn::Mul(g_at(d, c), xhat_at(d, c)); }) *
          inv_n;
      ForSpans(cols, [&](auto d, int64_t c) {
        // g − mean_g − xhat·mean_gx, then scaled by rstd.
        const auto centred = hn::Sub(g_at(d, c), hn::Set(d, mean_g));
        const auto v = hn::NegMulAdd(xhat_at(d, c), hn::Set(d, mean_gx), centred);
        hn::StoreU(hn::Mul(v, hn::Set(d, rs)), d, dxr + c);
      });
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd, const LayerNormSize& size) noexcept {
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(x, gamma, beta, y, mean, rstd, size);
}
void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, LayerNormGrads<float> grads,
                         const LayerNormSize& size) noexcept {
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(dy, x, gamma, mean, rstd, grads, size);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
