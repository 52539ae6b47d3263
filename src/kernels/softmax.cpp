// Row-wise softmax and log-softmax with attention masks (see qkv/kernels/softmax.h),
// Highway dynamic dispatch.
//
// Per row, with scores s = x + bias over the visible columns [0, visible):
//   m = max_c s,   Z = Σ_c exp(s − m)           (subtracting m keeps exp <= 1)
//   softmax = exp(s − m) / Z,   log_softmax = s − (m + log Z).
// A bias of -inf gives exp(-inf − m) = 0: Highway's Exp returns 0 below −104, so
// masked columns need no special case. A row whose m is -inf has nothing visible and
// is written as all zeros (softmax) or all -inf (log-softmax), never NaN.
// Rows are independent: parallel over rows, identical results for any thread count.
#include "qkv/kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/detail/parallel_rows.h"
#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/softmax.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "kernels/detail/for_spans-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr float kInf = std::numeric_limits<float>::infinity();
// Elements per parallel chunk of rows: exp makes rows compute-bound, so smaller than
// the memory-bound kernels' grain.
constexpr int64_t kGrain = int64_t{1} << 13;

template <class F>
void ForRows(int64_t rows, int64_t cols, const F& f) {
  detail::parallel_rows(rows, cols, kGrain, f);
}

// Scores s = x (+ bias) of one row. kBias is a template parameter so the common
// unbiased case has no branch or extra load in the inner loops.
template <bool kBias, class D>
HWY_INLINE hn::Vec<D> Score(D d, const float* x, const float* bias, int64_t c) {
  if constexpr (kBias)
    return hn::Add(hn::LoadU(d, x + c), hn::LoadU(d, bias + c));
  else
    return hn::LoadU(d, x + c);
}

// Four running maxima: with one, each vector waited for the previous max (a fifth of
// log-softmax's time on beam search's 8000-column rows). Max is exact and independent
// of order, so the row's maximum is the same float either way (for a row holding a NaN,
// which every caller's result turns into NaNs or an error, the NaN may be kept or not).
template <bool kBias>
HWY_INLINE float RowMax(const float* x, const float* bias, int64_t visible) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  auto m0 = hn::Set(d, -kInf), m1 = m0, m2 = m0, m3 = m0;
  int64_t c = 0;
  for (; c + 4 * lanes <= visible; c += 4 * lanes) {
    m0 = hn::Max(m0, Score<kBias>(d, x, bias, c));
    m1 = hn::Max(m1, Score<kBias>(d, x, bias, c + lanes));
    m2 = hn::Max(m2, Score<kBias>(d, x, bias, c + 2 * lanes));
    m3 = hn::Max(m3, Score<kBias>(d, x, bias, c + 3 * lanes));
  }
  for (; c + lanes <= visible; c += lanes) m0 = hn::Max(m0, Score<kBias>(d, x, bias, c));
  const hn::CappedTag<float, 1> d1;
  float tail = -kInf;
  for (; c < visible; ++c) tail = std::max(tail, hn::GetLane(Score<kBias>(d1, x, bias, c)));
  const auto m = hn::Max(hn::Max(m0, m1), hn::Max(m2, m3));
  return std::max(hn::GetLane(hn::MaxOfLanes(d, m)), tail);
}

// Z = Σ exp(s − m) over [0, visible); if kStore, also writes exp(s − m) to y.
template <bool kBias, bool kStore>
HWY_INLINE float RowExpSum(const float* x, const float* bias, float* y, int64_t visible, float m) {
  const hn::ScalableTag<float> d;
  auto vsum = hn::Zero(d);
  float tail = 0.0f;
  ForSpans(visible, [&](auto dd, int64_t c) {
    const auto e = hn::Exp(dd, hn::Sub(Score<kBias>(dd, x, bias, c), hn::Set(dd, m)));
    if constexpr (kStore) hn::StoreU(e, dd, y + c);
    if constexpr (hn::MaxLanes(dd) == 1)
      tail += hn::GetLane(e);
    else
      vsum = hn::Add(vsum, e);
  });
  return hn::GetLane(hn::SumOfLanes(d, vsum)) + tail;
}

HWY_INLINE int64_t Visible(const SoftmaxMask& mask, int64_t r, int64_t cols) {
  return ref::visible_cols(mask, r, cols);
}

template <bool kBias>
void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t cols, const SoftmaxMask& mask) {
  ForRows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float* br = kBias ? mask.bias + r * mask.bias_row_stride : nullptr;
      const int64_t visible = Visible(mask, r, cols);
      const float m = RowMax<kBias>(xr, br, visible);
      if (m == -kInf) {  // nothing visible
        std::fill(yr, yr + cols, 0.0f);
        continue;
      }
      // y may alias x: exp(s − m) overwrites x only after column c was read.
      const float z = RowExpSum<kBias, true>(xr, br, yr, visible, m);
      const float inv = 1.0f / z;  // z >= 1: the max column contributes exp(0)
      ForSpans(visible, [&](auto dd, int64_t c) {
        hn::StoreU(hn::Mul(hn::LoadU(dd, yr + c), hn::Set(dd, inv)), dd, yr + c);
      });
      std::fill(yr + visible, yr + cols, 0.0f);
    }
  });
}

template <bool kBias>
void LogSoftmaxRows(const float* x, float* y, int64_t rows, int64_t cols, const SoftmaxMask& mask) {
  ForRows(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float* br = kBias ? mask.bias + r * mask.bias_row_stride : nullptr;
      const int64_t visible = Visible(mask, r, cols);
      const float m = RowMax<kBias>(xr, br, visible);
      if (m == -kInf) {
        std::fill(yr, yr + cols, -kInf);
        continue;
      }
      const float z = RowExpSum<kBias, false>(xr, br, nullptr, visible, m);
      const float lse = float(double(m) + std::log(double(z)));
      // s − lse; a -inf score stays -inf since lse is finite. In place is fine: each
      // column is read before it is written.
      ForSpans(visible, [&](auto dd, int64_t c) {
        hn::StoreU(hn::Sub(Score<kBias>(dd, xr, br, c), hn::Set(dd, lse)), dd, yr + c);
      });
      std::fill(yr + visible, yr + cols, -kInf);
    }
  });
}

void SoftmaxImpl(const float* x, float* y, int64_t rows, int64_t cols, const SoftmaxMask& mask) {
  if (mask.bias)
    SoftmaxRows<true>(x, y, rows, cols, mask);
  else
    SoftmaxRows<false>(x, y, rows, cols, mask);
}

void LogSoftmaxImpl(const float* x, float* y, int64_t rows, int64_t cols, const SoftmaxMask& mask) {
  if (mask.bias)
    LogSoftmaxRows<true>(x, y, rows, cols, mask);
  else
    LogSoftmaxRows<false>(x, y, rows, cols, mask);
}

// dx = y ⊙ (dy − Σ_c y·dy). Masked columns have y = 0, hence dx = 0.
void SoftmaxBackwardImpl(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols) {
  ForRows(rows, cols, [&](int64_t r0, int64_t r1) {
    const hn::ScalableTag<float> d;
    for (int64_t r = r0; r < r1; ++r) {
      const float* yr = y + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);  // two chains hide FMA latency
      float tail = 0.0f;
      const int64_t lanes = int64_t(hn::Lanes(d));
      int64_t c = 0;
      for (; c + 2 * lanes <= cols; c += 2 * lanes) {
        acc0 = hn::MulAdd(hn::LoadU(d, yr + c), hn::LoadU(d, dyr + c), acc0);
        acc1 = hn::MulAdd(hn::LoadU(d, yr + c + lanes), hn::LoadU(d, dyr + c + lanes), acc1);
      }
      for (; c + lanes <= cols; c += lanes)
        acc0 = hn::MulAdd(hn::LoadU(d, yr + c), hn::LoadU(d, dyr + c), acc0);
      for (; c < cols; ++c) tail += yr[c] * dyr[c];
      const float inner = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1))) + tail;
      // dx may alias dy: column c of dy is read before dx[c] is written.
      ForSpans(cols, [&](auto dd, int64_t k) {
        const auto vy = hn::LoadU(dd, yr + k);
        hn::StoreU(hn::Mul(vy, hn::Sub(hn::LoadU(dd, dyr + k), hn::Set(dd, inner))), dd, dxr + k);
      });
    }
  });
}

// dx = dy − exp(y)·Σ_visible dy; masked columns (y = -inf) get 0.
void LogSoftmaxBackwardImpl(const float* y, const float* dy, float* dx, int64_t rows,
                            int64_t cols) {
  ForRows(rows, cols, [&](int64_t r0, int64_t r1) {
    const hn::ScalableTag<float> d;
    for (int64_t r = r0; r < r1; ++r) {
      const float* yr = y + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      auto vsum = hn::Zero(d);
      float tail = 0.0f;
      ForSpans(cols, [&](auto dd, int64_t c) {
        const auto masked = hn::Eq(hn::LoadU(dd, yr + c), hn::Set(dd, -kInf));
        const auto g = hn::IfThenZeroElse(masked, hn::LoadU(dd, dyr + c));
        if constexpr (hn::MaxLanes(dd) == 1)
          tail += hn::GetLane(g);
        else
          vsum = hn::Add(vsum, g);
      });
      const float total = hn::GetLane(hn::SumOfLanes(d, vsum)) + tail;
      ForSpans(cols, [&](auto dd, int64_t c) {
        const auto vy = hn::LoadU(dd, yr + c);
        const auto masked = hn::Eq(vy, hn::Set(dd, -kInf));
        // dy − exp(y)·total, as one fused negated multiply-add.
        const auto g = hn::NegMulAdd(hn::Exp(dd, vy), hn::Set(dd, total), hn::LoadU(dd, dyr + c));
        hn::StoreU(hn::IfThenZeroElse(masked, g), dd, dxr + c);
      });
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(SoftmaxImpl);
HWY_EXPORT(LogSoftmaxImpl);
HWY_EXPORT(SoftmaxBackwardImpl);
HWY_EXPORT(LogSoftmaxBackwardImpl);

void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols,
                  const SoftmaxMask& mask) noexcept {
  HWY_DYNAMIC_DISPATCH(SoftmaxImpl)(x, y, rows, cols, mask);
}
void softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows,
                           int64_t cols) noexcept {
  HWY_DYNAMIC_DISPATCH(SoftmaxBackwardImpl)(y, dy, dx, rows, cols);
}
void log_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols,
                      const SoftmaxMask& mask) noexcept {
  HWY_DYNAMIC_DISPATCH(LogSoftmaxImpl)(x, y, rows, cols, mask);
}
void log_softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows,
                               int64_t cols) noexcept {
  HWY_DYNAMIC_DISPATCH(LogSoftmaxBackwardImpl)(y, dy, dx, rows, cols);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
