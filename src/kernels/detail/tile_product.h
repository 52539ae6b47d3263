// TileProduct: the operands of one small product inside a fused kernel, for the
// register-tiled micro-kernel in tile_product-inl.h. Private to src/kernels.
//
//   C[r, c] = alpha · Σ_t a(r, t) · B[t, c]        (accumulate: C[r, c] += ...)
//   for r < m, c < n, t < k, with a(r, t) = a[r·ars + t·ats].
//
// B and C are row-major with contiguous rows (read and written as vectors along c);
// A is read one scalar at a time (broadcast), from any strides, so a transposed tile
// costs nothing: (ars, ats) = (1, ld) reads Aᵀ of a row-major [k, ld] tile. Nothing is
// packed or copied. The sum over t runs in order 0..k−1 for every element, whatever
// m, n or the register tile, so a product's result depends only on its operands.
#pragma once

#include <cstdint>

namespace qkv::kernels::detail {

struct TileProduct {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // a(r, t) = a[r·ars + t·ats]
  int64_t ars = 0, ats = 0;
  const float* b = nullptr;  // [k, n], rows ldb apart
  int64_t ldb = 0;
  float* c = nullptr;  // [m, n], rows ldc apart
  int64_t ldc = 0;
  float alpha = 1.0f;
  bool accumulate = false;  // C += alpha·AB instead of C = alpha·AB (old C never read)
  // [n] or nullptr: the bias added to each finished result (C = alpha·AB + bias, or with
  // accumulate C = (alpha·AB + C) + bias): the same bits as adding it afterwards, one
  // pass fewer over C.
  const float* bias = nullptr;
  // Applied to each finished result after the bias, in this order (a GEMM sets them on its
  // last slice of k only): relu, C = C > 0 ? C : 0 (kernels::activation_forward's ReLU);
  // gate [m, n], rows ldg apart, or nullptr: C = gate > 0 ? C : 0 (ReLU's backward with
  // the ReLU's output as gate). A feed-forward block's ReLU then needs no pass of its own.
  bool relu = false;
  const float* gate = nullptr;
  int64_t ldg = 0;
  // nullptr, or memory the caller reads or writes next (a kept probabilities slot, the
  // next rows of a GEMM's A): prefetch_rows rows of prefetch_floats floats, prefetch_ld
  // floats apart (one row: a single span), fetched a cache line per k step spread over
  // the product's blocks, so that the misses overlap the multiply-adds instead of
  // stalling later. Never read: only its cache lines are requested.
  const float* prefetch = nullptr;
  int64_t prefetch_floats = 0;
  int64_t prefetch_rows = 1, prefetch_ld = 0;
};

// The micro-kernel on the dispatched SIMD target (defined in flash_attention.cpp): for
// tests; kernels call the per-target TileProductRun directly.
void tile_product(const TileProduct& p) noexcept;

}  // namespace qkv::kernels::detail
