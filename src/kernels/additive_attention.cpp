// Fused additive attention scores, forward and backward (see
// qkv/kernels/additive_attention.h), Highway dynamic dispatch.
//
// The cost is one tanh per (query, key, hidden unit): the kernel is compute-bound on
// tanh, so every pass streams the hidden dimension through SIMD lanes with qp_i and
// kp_j rows hot in L1, and never writes the activations to memory.
//   forward   per query row i:  s_ij = Σ_a v_a tanh(qp_ia + kp_ja)
//   backward  pass 1, per query row i:  w_i = Σ_j ds_ij (1 − t²),  dv_i = Σ_j ds_ij t
//             pass 2, per key j:        z_j = Σ_i ds_ij (1 − t²)
//             dqp_i = v ⊙ w_i,  dkp_j = v ⊙ z_j,  dv = Σ_i dv_i (in row order)
// Pass 2 recomputes tanh rather than scattering into dkp from the row pass: that keeps
// chunks independent (no atomics, no per-thread copies of dkp) and the result
// bitwise identical for any thread count, at 1.5x the tanh count of a scatter.
#include "qkv/kernels/additive_attention.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/detail/parallel_rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/additive_attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// (keeps clang-format from moving the headers below above foreach_target.h)
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "kernels/detail/for_spans-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// tanh evaluations per parallel chunk (~50 us of work): rows are split finer than
// that only when there is more than one chunk.
constexpr int64_t kGrain = int64_t{1} << 15;

// Σ_a v_a tanh(q_a + k_a) over [0, n): two accumulators hide the FMA latency; the
// tail runs the same ops one lane at a time.
HWY_INLINE float Score(const float* q, const float* k, const float* v, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  auto term = [&](auto dd, int64_t c) {
    return hn::Mul(hn::LoadU(dd, v + c),
                   hn::Tanh(dd, hn::Add(hn::LoadU(dd, q + c), hn::LoadU(dd, k + c))));
  };
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

void ForwardImpl(const AdditiveScoreSpec& s, const float* qp, const float* kp, const float* v,
                 float* scores) {
  const int64_t a_n = s.hidden;
  detail::parallel_rows(s.batch * s.tq, s.tk * a_n, kGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / s.tq;
      const float* qr = qp + r * a_n;
      const float* kb = kp + b * s.tk * a_n;
      float* out = scores + r * s.tk;
      for (int64_t j = 0; j < s.tk; ++j) out[j] = Score(qr, kb + j * a_n, v, a_n);
    }
  });
}

// acc += ds (1 − t²) and, when dv_acc is set, dv_acc += ds t, with t = tanh(q + k),
// over [0, n).
HWY_INLINE void AccumulatePair(const float* q, const float* k, float ds, float* acc, float* dv_acc,
                               int64_t n) {
  ForSpans(n, [&](auto d, int64_t c) {
    const auto t = hn::Tanh(d, hn::Add(hn::LoadU(d, q + c), hn::LoadU(d, k + c)));
    const auto g = hn::Set(d, ds);
    const auto u = hn::Mul(g, t);
    // ds (1 − t²) = ds − (ds t) t
    hn::StoreU(hn::NegMulAdd(u, t, hn::Add(hn::LoadU(d, acc + c), g)), d, acc + c);
    if (dv_acc) hn::StoreU(hn::Add(hn::LoadU(d, dv_acc + c), u), d, dv_acc + c);
  });
}

HWY_INLINE void ScaleByV(const float* v, float* x, int64_t n) {
  ForSpans(n, [&](auto d, int64_t c) {
    hn::StoreU(hn::Mul(hn::LoadU(d, x + c), hn::LoadU(d, v + c)), d, x + c);
  });
}

// y += v ⊙ x over [0, n): the product rounded first, as in ScaleByV then an addition.
HWY_INLINE void AddScaledByV(const float* v, const float* x, float* y, int64_t n) {
  ForSpans(n, [&](auto d, int64_t c) {
    const auto p = hn::Mul(hn::LoadU(d, x + c), hn::LoadU(d, v + c));
    hn::StoreU(hn::Add(hn::LoadU(d, y + c), p), d, y + c);
  });
}

void BackwardImpl(const AdditiveScoreSpec& s, const float* qp, const float* kp, const float* v,
                  const float* ds, AdditiveScoreGrads<float> g) {
  const int64_t a_n = s.hidden;
  // Pass 1: query rows -> dqp and the per-row dv partials.
  detail::parallel_rows(s.batch * s.tq, s.tk * a_n, kGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / s.tq;
      float* w = g.dqp + r * a_n;
      float* dvr = g.dv_rows + r * a_n;
      std::fill(w, w + a_n, 0.0f);
      std::fill(dvr, dvr + a_n, 0.0f);
      for (int64_t j = 0; j < s.tk; ++j) {
        const float dsij = ds[r * s.tk + j];
        if (dsij != 0.0f)
          AccumulatePair(qp + r * a_n, kp + (b * s.tk + j) * a_n, dsij, w, dvr, a_n);
      }
      ScaleByV(v, w, a_n);
    }
  });
  // Pass 2: keys -> dkp (column j of ds, strided by tk); with add_dkp each key's sum is
  // made in a scratch row, then dkp += v ⊙ sum.
  detail::parallel_rows(s.batch * s.tk, s.tq * a_n, kGrain, [&](int64_t c0, int64_t c1) {
    std::vector<float> scratch(g.add_dkp ? size_t(a_n) : 0);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = c / s.tk, j = c % s.tk;
      float* z = g.add_dkp ? scratch.data() : g.dkp + c * a_n;
      std::fill(z, z + a_n, 0.0f);
      for (int64_t i = 0; i < s.tq; ++i) {
        const int64_t r = b * s.tq + i;
        const float dsij = ds[r * s.tk + j];
        if (dsij != 0.0f) AccumulatePair(qp + r * a_n, kp + c * a_n, dsij, z, nullptr, a_n);
      }
      if (g.add_dkp)
        AddScaledByV(v, z, g.dkp + c * a_n, a_n);
      else
        ScaleByV(v, z, a_n);
    }
  });
  // dv = Σ_r dv_rows[r], rows in order: deterministic for any thread count.
  std::fill(g.dv, g.dv + a_n, 0.0f);
  for (int64_t r = 0; r < s.batch * s.tq; ++r) {
    const float* dvr = g.dv_rows + r * a_n;
    ForSpans(a_n, [&](auto d, int64_t c) {
      hn::StoreU(hn::Add(hn::LoadU(d, g.dv + c), hn::LoadU(d, dvr + c)), d, g.dv + c);
    });
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);

void additive_scores_forward(const AdditiveScoreSpec& spec, const float* qp, const float* kp,
                             const float* v, float* scores) noexcept {
  if (spec.batch <= 0 || spec.tq <= 0 || spec.tk <= 0) return;
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(spec, qp, kp, v, scores);
}

void additive_scores_backward(const AdditiveScoreSpec& spec, const float* qp, const float* kp,
                              const float* v, const float* dscores,
                              AdditiveScoreGrads<float> grads) noexcept {
  if (spec.hidden <= 0) return;
  std::fill(grads.dv, grads.dv + spec.hidden, 0.0f);
  if (spec.batch <= 0 || spec.tq <= 0 || spec.tk <= 0) {
    std::fill(grads.dqp, grads.dqp + std::max<int64_t>(spec.batch * spec.tq, 0) * spec.hidden,
              0.0f);
    if (!grads.add_dkp)
      std::fill(grads.dkp, grads.dkp + std::max<int64_t>(spec.batch * spec.tk, 0) * spec.hidden,
                0.0f);
    return;
  }
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(spec, qp, kp, v, dscores, grads);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
