// Fused log-softmax + negative log-likelihood with label smoothing (Szegedy et al.
// 2016, sec. 7) and an ignore index, over rows of logits (rows, vocab).
//
// Target distribution q = (1 − ε)·onehot(t) + ε/V. Per row:
//   loss = −Σ_v q_v log p_v = lse − (1 − ε)·x_t − (ε/V)·Σ_v x_v,   lse = log Σ_v exp x_v
//   dlogits = dloss · (softmax(x) − q)
// Rows whose target equals ignore_index get loss 0 and gradient 0 (padding).
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/cross_entropy.h"

namespace qkv::kernels {

// logits (rows, vocab); targets (rows) in [0, vocab) or == ignore_index (checked by
// ops); writes loss (rows) and lse (rows, saved for backward).
void cross_entropy_forward(const float* logits, const int32_t* targets, float* loss, float* lse,
                           const CrossEntropySpec& spec) noexcept;
// dloss (rows): upstream gradient of each row's loss. Writes dlogits (rows, vocab),
// which may be logits itself (the gradient over the logits, as linear_cross_entropy's
// chunks do: one [rows, vocab] buffer instead of two), with the same bits.
void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                            const float* dloss, float* dlogits,
                            const CrossEntropySpec& spec) noexcept;

}  // namespace qkv::kernels
