// ForSpans: the loop shape shared by the row-wise Highway kernels. Private to
// src/kernels. A Highway "-inl" header: included once per SIMD target from a file
// that uses foreach_target.h, hence the toggling include guard instead of #pragma once.
#if defined(QKV_KERNELS_DETAIL_FOR_SPANS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QKV_KERNELS_DETAIL_FOR_SPANS_INL_H_
#undef QKV_KERNELS_DETAIL_FOR_SPANS_INL_H_
#else
#define QKV_KERNELS_DETAIL_FOR_SPANS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {

// Calls body(d, c) for the whole vectors of [0, n), then body(d1, c) for the tail with a
// one-lane tag running the same ops, so tail lanes match the vector path bit for bit.
template <class Body>
HWY_INLINE void ForSpans(int64_t n, const Body& body) {
  const hwy::HWY_NAMESPACE::ScalableTag<float> d;
  const hwy::HWY_NAMESPACE::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hwy::HWY_NAMESPACE::Lanes(d));
  int64_t c = 0;
  for (; c + lanes <= n; c += lanes) body(d, c);
  for (; c < n; ++c) body(d1, c);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
