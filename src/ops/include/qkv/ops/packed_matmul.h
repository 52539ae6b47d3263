// Products x · Wᵀ against a weight packed once (kernels/packed_gemm.h). For decoding:
// every step multiplies a few rows (batch × beam) by the same weights, and gemm()
// (OpenBLAS) packs the whole weight again on each call — a fifth of beam-4 decoding's
// time, profiled. autograd::PackedWeightsScope decides when this path is taken.
//
// F32 packs; F64 keeps W as it is and runs matmul (the reference path of the float64
// models and gradient checks).
#pragma once

#include <cstdint>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

class PackedWeight {
 public:
  PackedWeight() = default;
  // w [N, K], any strides: ShapeError unless 2-D and non-empty.
  explicit PackedWeight(const TensorView& w);

  int64_t rows() const noexcept { return n_; }  // N: output features
  int64_t cols() const noexcept { return k_; }  // K: input features
  DType dtype() const noexcept { return dtype_; }

 private:
  friend Tensor matmul_packed(const TensorView& x, const PackedWeight& w, const TensorView* bias);
  Tensor packed_;  // F32: the panels; F64: W, contiguous
  int64_t n_ = 0, k_ = 0;
  DType dtype_ = DType::F32;
};

// x [M, K] -> [M, N] = x · Wᵀ (+ bias [N]), equal to matmul(x, W, {.transpose_b = true})
// (then add_bias) up to the summation order (one in-order sum over K per element: the
// same bits for any M or thread count). The bias is added to each finished sum, bit for
// bit add_bias(matmul_packed(x, w), bias), without add_bias's pass over the result.
// ShapeError naming both shapes when K differs or x is not 2-D, or naming the bias when
// it is not [N]; ValueError for mixed dtypes.
Tensor matmul_packed(const TensorView& x, const PackedWeight& w, const TensorView* bias = nullptr);

}  // namespace qkv::ops
