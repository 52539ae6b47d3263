// PackedWeightsScope: a decoder's weights packed once per batch instead of on every step.
//
// While a scope is alive on a thread and grad mode is off, the products x · Wᵀ whose W
// is a parameter — a variable that requires grad, so a model's weight and never a
// step's intermediate — run on ops::PackedWeight (kernels/packed_gemm.h): W is packed
// on its first use and kept until the scope ends. This covers autograd::matmul(x, W,
// {.transpose_b = true}) with a 2-D x (nn::Linear, the tied output projection, an
// attention layer's output projection) and stacked_linear (the stacked Q/K/V
// projection). Why: each decoding step multiplies a few rows (batch × beam) by every
// weight of the decoder, and gemm() (OpenBLAS) repacks the whole weight on each call.
//
// The scope holds each packed variable, so its identity cannot be taken by another
// variable while the scope lives. The weights must not change while it is alive: the
// decoders (decode/greedy.cpp, beam_search.cpp) open one per batch, after encoding.
// Results equal the unpacked path up to the GEMM's summation order.
#pragma once

#include <memory>
#include <span>

#include "qkv/autograd/variable.h"
#include "qkv/ops/packed_matmul.h"

namespace qkv::autograd {

class PackedWeightsScope {
 public:
  PackedWeightsScope();
  ~PackedWeightsScope();
  PackedWeightsScope(const PackedWeightsScope&) = delete;
  PackedWeightsScope& operator=(const PackedWeightsScope&) = delete;

  // Weights packed so far (for tests and logs).
  int64_t packed_count() const noexcept;

 private:
  friend const ops::PackedWeight* packed_weight(std::span<const Variable> weights,
                                                const TensorView& stacked);
  struct Entries;
  std::unique_ptr<Entries> entries_;
  PackedWeightsScope* previous_;
};

// The packing of `weights` stacked by rows (`stacked`: their [ΣN, K] view), made on first
// use; nullptr when no scope is alive on this thread, grad mode is on, or a weight does
// not require grad (then the caller takes its unpacked path).
const ops::PackedWeight* packed_weight(std::span<const Variable> weights,
                                       const TensorView& stacked);

}  // namespace qkv::autograd
