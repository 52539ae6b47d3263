// Broadcasting sums that the elementwise ops (equal shapes only) do not cover.
#pragma once

#include "qkv/ops/elementwise.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// a [B, Tq, A], c [B, Tk, A] (non-empty, equal B and A, same dtype)
//   -> [B, Tq, Tk, A],  out[b, i, j, :] = a[b, i, :] + c[b, j, :].
// Every query/key pair of additive (Bahdanau) attention, W q_i + U k_j, before the tanh.
Tensor pairwise_add(const TensorView& a, const TensorView& c);

// y = pairwise_add(a, c):  da[b, i, :] = Σ_j dy[b, i, j, :],  dc[b, j, :] = Σ_i dy[b, i, j, :].
// dy [B, Tq, Tk, A] -> {da [B, Tq, A], db = dc [B, Tk, A]}.
BinaryGrads pairwise_add_backward(const TensorView& dy);

}  // namespace qkv::ops
