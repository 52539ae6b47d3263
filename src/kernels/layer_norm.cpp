// Layer normalisation forward and backward (see qkv/kernels/layer_norm.h), Highway
// dynamic dispatch.
//
// Forward, per row (two passes over x for a stable variance):
//   mean = Σx / n,  var = Σ(x − mean)² / n,  rstd = 1 / sqrt(var + eps),
//   y = (x − mean)·rstd·gamma + beta.
// Backward, with xhat = (x − mean)·rstd and g = dy·gamma, in one pass over x and dy:
//   dx = rstd·(g − mean_c(g) − xhat·mean_c(g·xhat))      -- per row
//   dgamma = Σ_r dy·xhat,  dbeta = Σ_r dy                 -- per fixed block of rows,
// then the blocks' partial sums added in block order, so dgamma/dbeta are deterministic
// for any thread count.
#include "qkv/kernels/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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

// Σ g(d, c) and Σ g(d, c)·xhat(d, c) over [0, n) in one sweep: two accumulators each
// over alternate vectors (hides add latency), then a one-lane tail running the same ops.
template <class G, class Xhat>
HWY_INLINE void RowSums(int64_t n, const G& g_at, const Xhat& xhat_at, float& sum_g,
                        float& sum_gx) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  auto g0 = hn::Zero(d), g1 = hn::Zero(d), gx0 = hn::Zero(d), gx1 = hn::Zero(d);
  int64_t c = 0;
  for (; c + 2 * lanes <= n; c += 2 * lanes) {
    const auto a = g_at(d, c), b = g_at(d, c + lanes);
    g0 = hn::Add(g0, a);
    g1 = hn::Add(g1, b);
    gx0 = hn::MulAdd(a, xhat_at(d, c), gx0);
    gx1 = hn::MulAdd(b, xhat_at(d, c + lanes), gx1);
  }
  for (; c + lanes <= n; c += lanes) {
    const auto a = g_at(d, c);
    g0 = hn::Add(g0, a);
    gx0 = hn::MulAdd(a, xhat_at(d, c), gx0);
  }
  float g_tail = 0.0f, gx_tail = 0.0f;
  for (; c < n; ++c) {
    const auto a = g_at(d1, c);
    g_tail += hn::GetLane(a);
    gx_tail += hn::GetLane(hn::Mul(a, xhat_at(d1, c)));
  }
  sum_g = hn::GetLane(hn::SumOfLanes(d, hn::Add(g0, g1))) + g_tail;
  sum_gx = hn::GetLane(hn::SumOfLanes(d, hn::Add(gx0, gx1))) + gx_tail;
}

// The parameter gradients' partial sums of one row block: rows are summed in row
// order into scratch that starts at zero.
constexpr int64_t kParamBlockRows = 64;

// Per row: one sweep for the two row means, then one that writes dx and adds dy·xhat
// and dy into the block's column partials (dgamma_part, dbeta_part). The row is in L1
// (or L2 for very wide rows) for the second sweep, so x and dy are read from memory
// once. dx may alias dy: each element of dy is read before dx's store to it.
void BackwardRowBlock(const float* dy, const float* x, const float* gamma, const float* mean,
                      const float* rstd, float* dx, bool accumulate_dx, float* dgamma_part,
                      float* dbeta_part, int64_t r0, int64_t r1, int64_t cols) {
  std::fill(dgamma_part, dgamma_part + cols, 0.0f);
  std::fill(dbeta_part, dbeta_part + cols, 0.0f);
  const float inv_n = 1.0f / float(cols);
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
    float sum_g, sum_gx;
    RowSums(cols, g_at, xhat_at, sum_g, sum_gx);
    const float mean_g = sum_g * inv_n, mean_gx = sum_gx * inv_n;
    ForSpans(cols, [&](auto d, int64_t c) {
      const auto vdy = hn::LoadU(d, dyr + c);
      const auto xhat = xhat_at(d, c);
      hn::StoreU(hn::MulAdd(vdy, xhat, hn::LoadU(d, dgamma_part + c)), d, dgamma_part + c);
      hn::StoreU(hn::Add(hn::LoadU(d, dbeta_part + c), vdy), d, dbeta_part + c);
      // g − mean_g − xhat·mean_gx, then scaled by rstd.
      const auto centred = hn::Sub(hn::Mul(vdy, hn::LoadU(d, gamma + c)), hn::Set(d, mean_g));
      const auto v = hn::NegMulAdd(xhat, hn::Set(d, mean_gx), centred);
      const auto out = hn::Mul(v, hn::Set(d, rs));
      hn::StoreU(accumulate_dx ? hn::Add(hn::LoadU(d, dxr + c), out) : out, d, dxr + c);
    });
  }
}

// The partial-sum buffers of this thread's calls: kept between calls (a training step
// calls this a dozen times with the same sizes), so no call faults in fresh pages. Its
// size is 2·cols floats per 64 rows, 3 % of x's: the largest call's stays allocated.
float* PartialsScratch(size_t floats) noexcept {
  thread_local std::vector<float> scratch;
  if (scratch.size() < floats) {
    try {
      scratch.resize(floats);
    } catch (...) {  // out of memory: the caller runs all rows as one block
      return nullptr;
    }
  }
  return scratch.data();
}

// dx, dgamma, dbeta in one pass over x and dy: fixed blocks of kParamBlockRows rows
// (parallel over the pool) each write dx and sum their rows into column partials, then
// the partials are added in block order. The blocks depend on the sizes only, so the
// results are bitwise the same for any thread count. Before (a column pass for the
// parameter gradients, then the row pass) x and dy were read from memory twice.
void BackwardImpl(const float* dy, const float* x, const float* gamma, const float* mean,
                  const float* rstd, LayerNormGrads<float> grads, const LayerNormSize& size) {
  const int64_t rows = std::max<int64_t>(size.rows, 0), cols = size.cols;
  if (cols <= 0) return;
  const int64_t blocks = (rows + kParamBlockRows - 1) / kParamBlockRows;
  if (blocks <= 1) {  // one block: its partials are the gradients
    BackwardRowBlock(dy, x, gamma, mean, rstd, grads.dx, grads.accumulate_dx, grads.dgamma,
                     grads.dbeta, 0, rows, cols);
    return;
  }
  float* part = PartialsScratch(size_t(2 * blocks * cols));
  if (part == nullptr) {  // serial, and sums in another order: only when memory ran out
    BackwardRowBlock(dy, x, gamma, mean, rstd, grads.dx, grads.accumulate_dx, grads.dgamma,
                     grads.dbeta, 0, rows, cols);
    return;
  }
  float* dbeta_part = part + blocks * cols;
  // Chunks of about kBlockGrain elements: with one 64-row block per chunk (32 Ki floats
  // at 512 columns) two threads ran 4096 x 512 in 1.0 ms, with 8-16 blocks in 0.41-0.53
  // (bench BM_LayerNormBackward, AMD EPYC Zen 5): a chunk per block costs more in
  // hand-offs and cache lines moving between cores than it balances.
  constexpr int64_t kBlockGrain = int64_t{1} << 18;
  const int64_t grain = std::max<int64_t>(1, kBlockGrain / (kParamBlockRows * cols));
  parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      BackwardRowBlock(dy, x, gamma, mean, rstd, grads.dx, grads.accumulate_dx, part + b * cols,
                       dbeta_part + b * cols, b * kParamBlockRows,
                       std::min(rows, (b + 1) * kParamBlockRows), cols);
  });
  // Column blocks of >= 64 floats: each adds the blocks' partials in block order, a
  // vector of columns at a time (its slice of dgamma / dbeta stays in L1).
  auto sum_parts = [&](int64_t c0, int64_t c1) {
    std::fill(grads.dgamma + c0, grads.dgamma + c1, 0.0f);
    std::fill(grads.dbeta + c0, grads.dbeta + c1, 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
      const float* g = part + b * cols;
      const float* bt = dbeta_part + b * cols;
      ForSpans(c1 - c0, [&](auto d, int64_t k) {
        const int64_t c = c0 + k;
        hn::StoreU(hn::Add(hn::LoadU(d, grads.dgamma + c), hn::LoadU(d, g + c)), d,
                   grads.dgamma + c);
        hn::StoreU(hn::Add(hn::LoadU(d, grads.dbeta + c), hn::LoadU(d, bt + c)), d,
                   grads.dbeta + c);
      });
    }
  };
  if (blocks * cols < 2 * kGrain)
    sum_parts(0, cols);
  else
    parallel_for(0, cols, 64, sum_parts);
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
