// TransposeCopy: a transposed copy of a float block, for packing weights into panels
// (gemm_portable's op(B), the packed decoding weights). Private to src/kernels. A
// Highway "-inl" header: included once per SIMD target from a file that uses
// foreach_target.h, hence the toggling include guard.
//
// Why: a float at a time, the panel writes are scattered stores, one per element; packing
// the output layer's 8000 × 256 weight that way was ~15 % of the logits product in
// training. Eight 8-float rows at a time go through registers instead: three rounds of
// 256-bit shuffles (32-bit interleave, 64-bit interleave, 128-bit halves) and eight
// vector stores.
#if defined(QKV_KERNELS_DETAIL_TRANSPOSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QKV_KERNELS_DETAIL_TRANSPOSE_INL_H_
#undef QKV_KERNELS_DETAIL_TRANSPOSE_INL_H_
#else
#define QKV_KERNELS_DETAIL_TRANSPOSE_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace transpose_detail {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
inline constexpr bool kHasTranspose8x8 = true;

// out[q·ldo + i] = in[i·ldi + q] for i, q < 8.
HWY_INLINE void Transpose8x8(const float* HWY_RESTRICT in, int64_t ldi, float* HWY_RESTRICT out,
                             int64_t ldo) {
  const hn::Full256<float> d;
  const hn::Repartition<double, decltype(d)> dd;
  using V = hn::Vec<decltype(d)>;
  V r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = hn::LoadU(d, in + i * ldi);
  for (int i = 0; i < 8; i += 2) {  // per 128-bit half: r_i,0 r_i+1,0 r_i,1 r_i+1,1 ...
    t[i] = hn::InterleaveLower(d, r[i], r[i + 1]);
    t[i + 1] = hn::InterleaveUpper(d, r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4)
    for (int i = 0; i < 2; ++i) {
      const auto lo = hn::BitCast(dd, t[h + i]), hi = hn::BitCast(dd, t[h + i + 2]);
      r[h + 2 * i] = hn::BitCast(d, hn::InterleaveLower(dd, lo, hi));
      r[h + 2 * i + 1] = hn::BitCast(d, hn::InterleaveUpper(dd, lo, hi));
    }
  // r[q] holds column q of rows 0-3 (low half) and column q + 4 of rows 0-3 (high half);
  // r[4 + q] the same for rows 4-7.
  for (int q = 0; q < 4; ++q) {
    hn::StoreU(hn::ConcatLowerLower(d, r[4 + q], r[q]), d, out + q * ldo);
    hn::StoreU(hn::ConcatUpperUpper(d, r[4 + q], r[q]), d, out + (q + 4) * ldo);
  }
}
#else
inline constexpr bool kHasTranspose8x8 = false;
#endif

}  // namespace transpose_detail

// dst[p·ldd + j] = src[j·lds + p] for j < rows, p < cols. Keep rows · ldd floats of dst
// within L1 (callers cut cols into chunks): the writes go down dst's rows.
HWY_INLINE void TransposeCopy(const float* HWY_RESTRICT src, int64_t lds, int64_t rows,
                              int64_t cols, float* HWY_RESTRICT dst, int64_t ldd) {
  int64_t j = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  const int64_t cols8 = cols / 8 * 8;
  for (; j + 8 <= rows; j += 8) {
    for (int64_t p = 0; p < cols8; p += 8)
      transpose_detail::Transpose8x8(src + j * lds + p, lds, dst + p * ldd + j, ldd);
    for (int64_t jj = j; jj < j + 8; ++jj)  // the columns past the last 8
      for (int64_t p = cols8; p < cols; ++p) dst[p * ldd + jj] = src[jj * lds + p];
  }
#endif
  for (; j < rows; ++j)
    for (int64_t p = 0; p < cols; ++p) dst[p * ldd + j] = src[j * lds + p];
}

// One panel of a packed product: panel[t·width + j] = src[j·lds + t] for j < cols,
// t < k, and 0 for cols <= j < width (the columns past the matrix's edge). The rows of
// src are the panel's columns; they go in 64 of k at a time, so that the panel rows
// being written (64 × width floats) stay in L1.
HWY_INLINE void TransposeIntoPanel(const float* HWY_RESTRICT src, int64_t lds, int64_t cols,
                                   int64_t k, float* HWY_RESTRICT panel, int64_t width) {
  constexpr int64_t kChunk = 64;
  for (int64_t t1 = 0; t1 < k; t1 += kChunk) {
    const int64_t t2 = k < t1 + kChunk ? k : t1 + kChunk;
    TransposeCopy(src + t1, lds, cols, t2 - t1, panel + t1 * width, width);
    for (int64_t j = cols; j < width; ++j)
      for (int64_t t = t1; t < t2; ++t) panel[t * width + j] = 0.0f;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
