// Fused additive (Bahdanau) scores at the tensor level (kernels/additive_attention.h):
//   scores[b, i, j] = Σ_a v[a] · tanh(qp[b, i, a] + kp[b, j, a]),
// where qp = W q (+ bias) and kp = U k are the caller's projections. Memory O(T·A +
// Tq·Tk): the [B, Tq, Tk, A] activations of the composed path are never stored.
// F32 runs the SIMD kernel, F64 its scalar reference twin. Strided inputs are staged.
#pragma once

#include "qkv/ops/grad_target.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// qp [B, Tq, A], kp [B, Tk, A], v [A] -> [B, Tq, Tk]. Every dim >= 1.
// ShapeError on ranks/mismatched B or A/empty dims, ValueError on mixed dtypes.
Tensor additive_scores(const TensorView& qp, const TensorView& kp, const TensorView& v);

struct AdditiveScoresGradients {
  Tensor dqp;  // [B, Tq, A]
  Tensor dkp;  // [B, Tk, A]
  Tensor dv;   // [A]
};

// dscores [B, Tq, Tk] -> gradients of qp, kp, v.
AdditiveScoresGradients additive_scores_backward(const TensorView& dscores, const TensorView& qp,
                                                 const TensorView& kp, const TensorView& v);
// The same with kp's gradient written into (or, with dkp.add, added to) caller storage
// (grad_target.h), which the result's dkp then shares: a decoder attends to the same keys
// at every step. An undefined dkp.grad allocates as above. Also throws ShapeError /
// ValueError for a target that does not fit kp (shape, dtype, contiguity).
AdditiveScoresGradients additive_scores_backward(const TensorView& dscores, const TensorView& qp,
                                                 const TensorView& kp, const TensorView& v,
                                                 const GradTarget& dkp);

}  // namespace qkv::ops
