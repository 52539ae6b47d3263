// ExpSoftmax: exp(x) for a softmax's x = s − max <= 0, shorter than hn::Exp. Private to
// src/kernels (flash attention's online softmax, cross-entropy's log-sum-exp and
// gradient). A Highway "-inl" header: included once per SIMD target from a file that
// uses foreach_target.h, hence the toggling include guard.
//
// hn::Exp's range reduction and polynomial without its handling of large and very
// negative x: 18 instead of ~26 operations a vector (AVX-512: 15, below). Valid up to
// x < 88; below −87.3 it gives 2^−126 ≈ 1e−38 instead of 0 or a denormal (ExpNonPositive
// gives 0 there). hn::Exp was ~15 % of a d = 64 flash forward on AVX2. Within the normal
// range the same reduction and polynomial as hn::Exp: the same bits except where
// x / ln 2 lies exactly halfway between integers (hn::Exp rounds q away from zero,
// here to even).
#if defined(QKV_KERNELS_DETAIL_EXP_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QKV_KERNELS_DETAIL_EXP_SOFTMAX_INL_H_
#undef QKV_KERNELS_DETAIL_EXP_SOFTMAX_INL_H_
#else
#define QKV_KERNELS_DETAIL_EXP_SOFTMAX_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace exp_detail {
namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V = hn::Vec<D>>
HWY_INLINE V ExpSoftmax(D d, V x) {
  hn::impl::ExpImpl<float> impl;
  x = hn::Max(x, hn::Set(d, -87.3f));
  const V log2e = hn::Set(d, 1.442695040888963407359924681f);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if constexpr (hn::MaxLanes(d) == 16) {
    // AVX-512: q rounded as a float (vrndscaleps) and 2^q applied by vscalefps, 3
    // operations fewer a vector than through int32 (no conversions, no exponent-field
    // arithmetic) and the same bits: q is the same integer (nearest, ties to even), the
    // reduction the same two FMAs with ln 2 split in a high part exact in few bits and
    // the rest, and y·2^q is rounded once either way (2^q >= 2^−126 is normal after the
    // clamp).
    const V qf = hn::Round(hn::Mul(x, log2e));
    const V r = hn::MulAdd(qf, hn::Set(d, -1.428606765330187045e-6f),
                           hn::MulAdd(qf, hn::Set(d, -0.693145751953125f), x));
    const V y = hn::Add(impl.ExpPoly(d, r), hn::Set(d, 1.0f));
    return V{_mm512_scalef_ps(y.raw, qf.raw)};
  }
#endif
  const auto q = hn::NearestInt(hn::Mul(x, log2e));
  const V y = hn::Add(impl.ExpPoly(d, impl.ExpReduce(d, x, q)), hn::Set(d, 1.0f));
  return hn::Mul(y, impl.Pow2I(d, q));
}

// ExpSoftmax with 0 below −87.3 (where exp is 0 or a denormal) and for NaN, as hn::Exp
// gives: a masked entry (−inf) contributes exactly nothing.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V ExpNonPositive(D d, V x) {
  return hn::IfThenElseZero(hn::Ge(x, hn::Set(d, -87.3f)), ExpSoftmax(d, x));
}

}  // namespace exp_detail
}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
