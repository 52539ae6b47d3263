// Products with a weight that stays fixed over many small products: C = A · Wᵀ with
// W [n, k] row-major (a Linear's weight, or the tied embedding table as the output
// projection), packed once.
//
// Why: decoding multiplies each step's few hidden rows (batch × beam) by the output
// projection, 8000 × 256 in `qkv train`'s default Transformer. gemm() (OpenBLAS) packs
// that whole matrix again on every call; profiled on beam-4 decoding that repacking was
// a quarter of the time. Packed once per decoded batch, each step only streams the
// panels through qkv's register-tiled micro-kernel (detail/tile_product-inl.h).
//
// Layout: panels of kPackedPanel = 32 columns of Wᵀ (= rows of W). Panel p holds
// Wᵀ[:, 32p : 32p + 32] as [k, 32], contiguous; the last panel is zero-padded. 32
// floats are 2 AVX-512 or 4 AVX2 vectors, so one packing serves every SIMD target.
//
// Each C element is one in-order FMA chain over k (t = 0..k−1): the result depends
// only on the operands, not on m, the thread count or the register tile.
#pragma once

#include <cstdint>

namespace qkv::kernels {

inline constexpr int64_t kPackedPanel = 32;

// Floats pack_transposed writes for W [n, k]: ceil(n / 32) · 32 · k.
constexpr int64_t packed_transposed_size(int64_t n, int64_t k) noexcept {
  return (n + kPackedPanel - 1) / kPackedPanel * kPackedPanel * k;
}

// w [n, k] (rows ldw apart) -> packed (packed_transposed_size(n, k) floats).
void pack_transposed(const float* w, int64_t n, int64_t k, int64_t ldw, float* packed) noexcept;

// c [m, n] (rows ldc apart) = a [m, k] (rows lda apart) · Wᵀ (+ bias [n] when not
// nullptr: added to each finished sum, the same bits as adding it to c afterwards), W
// packed by pack_transposed(w, n, k, ...). Panels are split over qkv's pool.
void gemm_packed(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed, int64_t n,
                 float* c, int64_t ldc, const float* bias = nullptr) noexcept;

}  // namespace qkv::kernels
