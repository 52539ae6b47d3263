// Fused log-softmax + NLL with label smoothing (see cross_entropy.h), Highway dispatch.
//
// Forward, per row x (V), in ONE read of the row (see Stats): max, Σ exp(x − max)
// (stable: every term in (0, 1]) and Σ x together; then
//   lse = max + log Σ exp(x − max);  loss = lse − (1 − ε)·x_t − (ε/V)·Σ x.
// Backward: dx_v = g·exp(x_v − lse) − g·ε/V, then dx_t −= g·(1 − ε)   (g = dloss).
// Rows are independent; parallel_for splits rows, so results do not depend on the
// thread count. Per-row scalars (lse, loss) are finished in double.
#include "qkv/kernels/cross_entropy.h"

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/detail/parallel_rows.h"
#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cross_entropy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "kernels/detail/exp_softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using D1 = hn::CappedTag<float, 1>;  // one-lane tag for backward tails: same ops
// The exps of x − max and x − lse (<= 0): ExpNonPositive's 15-18 operations a vector
// instead of hn::Exp's ~26, 0 for masked (−inf) logits as before. Forward and backward
// together were 1.8 % of a Transformer update at 1 thread, mostly these exps.
using exp_detail::ExpNonPositive;

// Logits per parallel chunk: enough work (≈ 16 K exps) to amortise a pool hand-off.
constexpr int64_t kGrainFloats = int64_t{1} << 14;

template <class F>
void ForRows(int64_t rows, int64_t vocab, const F& f) {
  detail::parallel_rows(rows, vocab, kGrainFloats, f);
}

struct RowStats {
  double lse;    // log Σ exp x
  double sum_x;  // Σ x
};

// One pass over the row ("online" log-sum-exp, Milakov & Gimelshein 2018): each lane
// keeps a running max m and sums s = Σ exp(x − m); when a block of four vectors brings
// a new max, the lane sums are rescaled by exp(m_old − m_new). Past the first blocks
// the max rarely moves, so the rescale branch is rarely taken and the cost is one exp
// per element -- and the row is read from memory once, with the exps overlapping the
// traffic. Four accumulators keep four exp+add chains in flight. At the end
//   lse = M + log Σ_l s_l · exp(m_l − M),   M = max_l m_l.
HWY_INLINE RowStats Stats(const float* HWY_RESTRICT x, int64_t V) {
  const DF d;
  const auto N = static_cast<int64_t>(hn::Lanes(d));
  int64_t v = 0;
  double m_tail = -HUGE_VAL, s_tail = 0.0, sum_x = 0.0;
  if (V >= 4 * N) {
    // The max starts at -FLT_MAX, not -inf, so a lane that only sees -inf logits (a
    // masked vocabulary entry) sums exp(-inf) = 0, never exp(-inf + inf) = NaN.
    VF m = hn::Set(d, -FLT_MAX), sx = hn::Zero(d);
    VF s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
    for (; v + 4 * N <= V; v += 4 * N) {
      const VF x0 = hn::LoadU(d, x + v), x1 = hn::LoadU(d, x + v + N);
      const VF x2 = hn::LoadU(d, x + v + 2 * N), x3 = hn::LoadU(d, x + v + 3 * N);
      sx = hn::Add(sx, hn::Add(hn::Add(x0, x1), hn::Add(x2, x3)));
      const VF bmax = hn::Max(hn::Max(x0, x1), hn::Max(x2, x3));
      if (!hn::AllFalse(d, bmax > m)) [[unlikely]] {
        const VF m_new = hn::Max(m, bmax);
        const VF scale = hn::Exp(d, hn::Sub(m, m_new));
        s0 = hn::Mul(s0, scale), s1 = hn::Mul(s1, scale);
        s2 = hn::Mul(s2, scale), s3 = hn::Mul(s3, scale);
        m = m_new;
      }
      s0 = hn::Add(s0, ExpNonPositive(d, hn::Sub(x0, m)));
      s1 = hn::Add(s1, ExpNonPositive(d, hn::Sub(x1, m)));
      s2 = hn::Add(s2, ExpNonPositive(d, hn::Sub(x2, m)));
      s3 = hn::Add(s3, ExpNonPositive(d, hn::Sub(x3, m)));
    }
    const VF s = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
    HWY_ALIGN float ml[hn::MaxLanes(DF())], sl[hn::MaxLanes(DF())];
    hn::Store(m, d, ml);
    hn::Store(s, d, sl);
    const float M = hn::GetLane(hn::MaxOfLanes(d, m));
    sum_x = double(hn::GetLane(hn::SumOfLanes(d, sx)));
    double total = 0.0;
    for (int64_t l = 0; l < N; ++l) total += double(sl[l]) * std::exp(double(ml[l]) - M);
    m_tail = M, s_tail = total;
  }
  for (; v < V; ++v) {  // the last < 4 vectors (or a short row), online in double
    const double xv = x[v];
    sum_x += xv;
    if (xv > m_tail) s_tail = s_tail * std::exp(m_tail - xv), m_tail = xv;
    s_tail += std::exp(xv - m_tail);
  }
  return {m_tail + std::log(s_tail), sum_x};
}

void ForwardImpl(const float* logits, const int32_t* targets, float* loss, float* lse,
                 const CrossEntropySpec& spec) {
  const int64_t V = spec.vocab;
  const double eps = spec.label_smoothing;
  ForRows(spec.rows, V, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = logits + r * V;  // (V)
      const RowStats st = Stats(x, V);
      const double l = st.lse;
      lse[r] = static_cast<float>(l);
      const int32_t t = targets[r];
      loss[r] = t == spec.ignore_index ? 0.0f
                                       : static_cast<float>(l - (1.0 - eps) * double(x[t]) -
                                                            eps / double(V) * double(st.sum_x));
    }
  });
}

void BackwardImpl(const float* logits, const int32_t* targets, const float* lse, const float* dloss,
                  float* dlogits, const CrossEntropySpec& spec) {
  const int64_t V = spec.vocab;
  const double eps = spec.label_smoothing;
  ForRows(spec.rows, V, [&](int64_t r0, int64_t r1) {
    const DF d;
    const D1 d1;
    const auto N = static_cast<int64_t>(hn::Lanes(d));
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = logits + r * V;  // (V)
      float* dx = dlogits + r * V;      // (V)
      const int32_t t = targets[r];
      if (t == spec.ignore_index) {
        const VF z = hn::Zero(d);
        int64_t v = 0;
        for (; v + N <= V; v += N) hn::StoreU(z, d, dx + v);
        for (; v < V; ++v) dx[v] = 0.0f;
        continue;
      }
      const double g = dloss[r];
      // Read before the row is written: dlogits may be logits itself (header).
      const double x_t = double(x[t]);
      const auto smooth = static_cast<float>(-g * eps / double(V));  // −g·ε/V
      const VF vg = hn::Set(d, static_cast<float>(g)), vl = hn::Set(d, lse[r]);
      const VF vs = hn::Set(d, smooth);
      int64_t v = 0;
      for (; v + N <= V; v += N)
        hn::StoreU(hn::MulAdd(vg, ExpNonPositive(d, hn::Sub(hn::LoadU(d, x + v), vl)), vs), d,
                   dx + v);
      const auto vg1 = hn::Set(d1, static_cast<float>(g)), vl1 = hn::Set(d1, lse[r]);
      const auto vs1 = hn::Set(d1, smooth);
      for (; v < V; ++v)
        hn::StoreU(hn::MulAdd(vg1, ExpNonPositive(d1, hn::Sub(hn::LoadU(d1, x + v), vl1)), vs1), d1,
                   dx + v);
      // The target's one-hot share, (p_t − q_t) = p_t − ε/V − (1 − ε), redone in double
      // so the cancellation when p_t ≈ 1 costs no extra rounding.
      const double p_t = std::exp(x_t - double(lse[r]));
      dx[t] = static_cast<float>(g * (p_t - eps / double(V) - (1.0 - eps)));
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

void cross_entropy_forward(const float* logits, const int32_t* targets, float* loss, float* lse,
                           const CrossEntropySpec& spec) noexcept {
  if (spec.rows <= 0 || spec.vocab <= 0) return;
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(logits, targets, loss, lse, spec);
}

void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                            const float* dloss, float* dlogits,
                            const CrossEntropySpec& spec) noexcept {
  if (spec.rows <= 0 || spec.vocab <= 0) return;
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(logits, targets, lse, dloss, dlogits, spec);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
