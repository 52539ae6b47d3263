// Softmax and log-softmax over the last dimension, with the attention masks of
// kernels/softmax.h: per-row valid lengths (key padding) and an additive bias (causal
// −inf masks, relative position terms). A fully masked row gives zeros (softmax) or
// −inf (log-softmax) and a zero gradient, never NaN.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct SoftmaxMask {
  // (rows) or empty: row r sees columns [0, valid_lengths[r]); each in [0, C].
  std::span<const int64_t> valid_lengths;
  // [C] (one row, broadcast to every row) or x's shape [..., C]; added to the scores.
  // Same dtype as x. Treated as a constant: no gradient flows into it.
  std::optional<TensorView> bias;
};

// x [..., C] (non-empty) -> [..., C]; rows are all leading positions.
Tensor softmax(const TensorView& x, const SoftmaxMask& mask = {});
// y = softmax(x):  dx = y ⊙ (dy − Σ_c y⊙dy) per row.  dy, y [..., C].
Tensor softmax_backward(const TensorView& dy, const TensorView& y);

// x [..., C] (non-empty) -> [..., C] = x − log Σ_visible exp x.
Tensor log_softmax(const TensorView& x, const SoftmaxMask& mask = {});
// The same values written over x [..., C] (contiguous: ShapeError otherwise), for a
// caller that needs the scores only as log-probabilities -- a decoder's step, whose
// [rows, vocabulary] logits would otherwise be read once and a second buffer of that size
// written (cold in cache) every step. Bitwise log_softmax(x).
void log_softmax_in_place(Tensor& x);
// y = log_softmax(x):  dx = dy − exp(y) · Σ_visible dy per row (0 where masked).
Tensor log_softmax_backward(const TensorView& dy, const TensorView& y);

}  // namespace qkv::ops
