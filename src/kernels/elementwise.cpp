// Elementwise kernels (see qkv/kernels/elementwise.h), Highway dynamic dispatch: this
// file is compiled once per SIMD target through HWY_TARGET_INCLUDE.
#include "qkv/kernels/elementwise.h"

#include <cstdint>

#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Work per parallel chunk. Elementwise ops are memory-bound, so a chunk must be big
// enough (64 KiB of floats per stream) that handing it to another thread pays off.
// Elements are independent, so any chunking gives identical results.
constexpr int64_t kGrain = int64_t{1} << 14;

template <class F>
void ForChunks(int64_t n, const F& f) {
  if (n <= kGrain) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  parallel_for(0, n, kGrain, f);
}

// y[i] = op(d, x[i]) over [begin, end): whole vectors, then a one-lane tail that runs
// the same Highway ops, so tail elements get exactly the vector path's result.
template <class Op>
HWY_INLINE void MapUnary(const float* x, float* y, int64_t begin, int64_t end, const Op& op) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes) hn::StoreU(op(d, hn::LoadU(d, x + i)), d, y + i);
  for (; i < end; ++i) hn::StoreU(op(d1, hn::LoadU(d1, x + i)), d1, y + i);
}

template <class Op>
HWY_INLINE void MapBinary(const float* a, const float* b, float* y, int64_t begin, int64_t end,
                          const Op& op) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes)
    hn::StoreU(op(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
  for (; i < end; ++i) hn::StoreU(op(d1, hn::LoadU(d1, a + i), hn::LoadU(d1, b + i)), d1, y + i);
}

template <class Op>
void Binary(const float* a, const float* b, float* y, int64_t n, const Op& op) {
  ForChunks(n, [&](int64_t lo, int64_t hi) { MapBinary(a, b, y, lo, hi, op); });
}

void AddImpl(const float* a, const float* b, float* y, int64_t n) {
  Binary(a, b, y, n, [](auto, auto va, auto vb) { return hn::Add(va, vb); });
}
void SubImpl(const float* a, const float* b, float* y, int64_t n) {
  Binary(a, b, y, n, [](auto, auto va, auto vb) { return hn::Sub(va, vb); });
}
void MulImpl(const float* a, const float* b, float* y, int64_t n) {
  Binary(a, b, y, n, [](auto, auto va, auto vb) { return hn::Mul(va, vb); });
}
void ScaleImpl(const float* x, float s, float* y, int64_t n) {
  ForChunks(n, [&](int64_t lo, int64_t hi) {
    MapUnary(x, y, lo, hi, [s](auto d, auto v) { return hn::Mul(hn::Set(d, s), v); });
  });
}
void AxpyImpl(float alpha, const float* x, float* y, int64_t n) {
  // y = alpha·x + y; a single fused rounding, where the reference rounds twice.
  Binary(x, y, y, n,
         [alpha](auto d, auto vx, auto vy) { return hn::MulAdd(hn::Set(d, alpha), vx, vy); });
}

// x, y (rows, cols), bias (cols). Parallel over rows; each row is a Binary over cols.
void AddBiasImpl(const float* x, const float* bias, float* y, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t grain = cols >= kGrain ? 1 : kGrain / cols;
  auto rows_fn = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      MapBinary(x + r * cols, bias, y + r * cols, 0, cols,
                [](auto, auto vx, auto vb) { return hn::Add(vx, vb); });
  };
  if (rows <= grain)
    rows_fn(0, rows);
  else
    parallel_for(0, rows, grain, rows_fn);
}

// sigmoid(z) = 1 / (1 + e^−z), from e = e^−|z| ∈ (0, 1] so nothing overflows:
//   z >= 0: 1 / (1 + e);   z < 0: e / (1 + e).
// Sets s = sigmoid(z) and s_neg = sigmoid(−z) = 1 − s, each without cancellation.
template <class D, class V>
HWY_INLINE void SigmoidPair(D d, V z, V& s, V& s_neg) {
  const V one = hn::Set(d, 1.0f);
  const V e = hn::Exp(d, hn::Neg(hn::Abs(z)));
  const V inv = hn::Div(one, hn::Add(one, e));
  const V small = hn::Mul(e, inv);  // sigmoid(−|z|)
  const auto pos = hn::Ge(z, hn::Zero(d));
  s = hn::IfThenElse(pos, inv, small);
  s_neg = hn::IfThenElse(pos, small, inv);
}

// GELU, tanh form. 0.5·(1 + tanh(u)) = sigmoid(2u), so
//   gelu(x) = x · sigmoid(2u),  u = sqrt(2/π)·(x + 0.044715·x³),
// which needs one exp and stays accurate for large negative x, where 1 + tanh(u)
// would cancel.
constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/π)
constexpr float kGeluC = 0.044715f;

template <class D, class V>
HWY_INLINE V GeluTwoU(D d, V x) {
  const V x2 = hn::Mul(x, x);
  const V inner = hn::MulAdd(hn::Mul(hn::Set(d, kGeluC), x2), x, x);  // x + c·x³
  return hn::Mul(hn::Set(d, 2.0f * kGeluK), inner);
}

void ActivationForwardImpl(Activation f, const float* x, float* y, int64_t n) {
  ForChunks(n, [&](int64_t lo, int64_t hi) {
    switch (f) {
      case Activation::Tanh:
        MapUnary(x, y, lo, hi, [](auto d, auto v) { return hn::Tanh(d, v); });
        break;
      case Activation::Sigmoid:
        MapUnary(x, y, lo, hi, [](auto d, auto v) {
          decltype(v) s, s_neg;
          SigmoidPair(d, v, s, s_neg);
          return s;
        });
        break;
      case Activation::Relu:
        // x > 0 ? x : 0, as the reference (maps -0 and NaN to +0).
        MapUnary(x, y, lo, hi,
                 [](auto d, auto v) { return hn::IfThenElseZero(hn::Gt(v, hn::Zero(d)), v); });
        break;
      case Activation::Gelu:
        MapUnary(x, y, lo, hi, [](auto d, auto v) {
          decltype(v) s, s_neg;
          SigmoidPair(d, GeluTwoU(d, v), s, s_neg);
          return hn::Mul(v, s);
        });
        break;
    }
  });
}

// Per-element backward bodies: one lane-group of x, y, dy -> dx.
//   tanh'    = 1 − y²            (fused: one rounding)
//   sigmoid' = y·(1 − y)
//   gelu'    = 0.5(1 + t) + 0.5·x·(1 − t²)·k·(1 + 3c·x²),  t = tanh(u); with
//              s = sigmoid(2u): 0.5(1 + t) = s and 1 − t² = 4·s·(1 − s), so
//   gelu'    = s + 2·k·x·s·(1 − s)·(1 + 3c·x²).
template <class D>
HWY_INLINE void BackwardSpan(D d, Activation f, const float* x, const float* y, const float* dy,
                             float* dx, int64_t i) {
  using V = hn::Vec<D>;
  const V vdy = hn::LoadU(d, dy + i);
  const V one = hn::Set(d, 1.0f);
  V out;
  switch (f) {
    case Activation::Tanh: {
      const V vy = hn::LoadU(d, y + i);
      out = hn::Mul(vdy, hn::NegMulAdd(vy, vy, one));
      break;
    }
    case Activation::Sigmoid: {
      const V vy = hn::LoadU(d, y + i);
      out = hn::Mul(hn::Mul(vdy, vy), hn::Sub(one, vy));
      break;
    }
    case Activation::Relu: {
      const V vx = hn::LoadU(d, x + i);
      out = hn::IfThenElseZero(hn::Gt(vx, hn::Zero(d)), vdy);
      break;
    }
    case Activation::Gelu: {
      const V vx = hn::LoadU(d, x + i);
      V s, s_neg;
      SigmoidPair(d, GeluTwoU(d, vx), s, s_neg);
      // Beyond |x| = 20, s·(1 − s) underflows to 0 while x·(1 + 3c·x²) may overflow
      // (0·inf = NaN); clamping x in that factor changes nothing else.
      const V xc = hn::Min(hn::Max(vx, hn::Set(d, -20.0f)), hn::Set(d, 20.0f));
      const V poly = hn::MulAdd(hn::Set(d, 3.0f * kGeluC), hn::Mul(xc, xc), one);
      const V slope = hn::Mul(hn::Mul(hn::Set(d, 2.0f * kGeluK), xc), hn::Mul(s, s_neg));
      out = hn::Mul(vdy, hn::MulAdd(slope, poly, s));
      break;
    }
  }
  hn::StoreU(out, d, dx + i);
}

void ActivationBackwardImpl(Activation f, const float* x, const float* y, const float* dy,
                            float* dx, int64_t n) {
  ForChunks(n, [&](int64_t lo, int64_t hi) {
    const hn::ScalableTag<float> d;
    const hn::CappedTag<float, 1> d1;
    const int64_t lanes = int64_t(hn::Lanes(d));
    int64_t i = lo;
    for (; i + lanes <= hi; i += lanes) BackwardSpan(d, f, x, y, dy, dx, i);
    for (; i < hi; ++i) BackwardSpan(d1, f, x, y, dy, dx, i);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(AddImpl);
HWY_EXPORT(SubImpl);
HWY_EXPORT(MulImpl);
HWY_EXPORT(ScaleImpl);
HWY_EXPORT(AxpyImpl);
HWY_EXPORT(AddBiasImpl);
HWY_EXPORT(ActivationForwardImpl);
HWY_EXPORT(ActivationBackwardImpl);

void add(const float* a, const float* b, float* y, int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(AddImpl)(a, b, y, n);
}
void sub(const float* a, const float* b, float* y, int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(SubImpl)(a, b, y, n);
}
void mul(const float* a, const float* b, float* y, int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(MulImpl)(a, b, y, n);
}
void scale(const float* x, float s, float* y, int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(ScaleImpl)(x, s, y, n);
}
void axpy(float alpha, const float* x, float* y, int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(AxpyImpl)(alpha, x, y, n);
}
void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols) noexcept {
  HWY_DYNAMIC_DISPATCH(AddBiasImpl)(x, bias, y, rows, cols);
}
void activation_forward(Activation f, const float* x, float* y, int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(ActivationForwardImpl)(f, x, y, n);
}
void activation_backward(Activation f, const float* x, const float* y, const float* dy, float* dx,
                         int64_t n) noexcept {
  HWY_DYNAMIC_DISPATCH(ActivationBackwardImpl)(f, x, y, dy, dx, n);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
