// Fused additive (Bahdanau) attention scores: s = vᵀ tanh(qp_i + kp_j) for every query
// i and key j, forward and backward, without materialising the [batch, tq, tk, hidden]
// activations the composed path builds (memory O((tq + tk)·hidden + tq·tk), not
// O(tq·tk·hidden)). tanh is recomputed in backward instead of stored.
//
// Layouts (contiguous, row-major) and the spec: see reference/additive_attention.h.
// Work is split into fixed chunks of query rows (forward, dqp, dv) and of keys (dkp),
// and dv is summed from per-row partials in row order, so results are bitwise
// identical for any thread count.
#pragma once

#include "qkv/kernels/reference/additive_attention.h"

namespace qkv::kernels {

// qp [batch,tq,A], kp [batch,tk,A], v [A] -> scores [batch,tq,tk] (overwritten).
void additive_scores_forward(const AdditiveScoreSpec& spec, const float* qp, const float* kp,
                             const float* v, float* scores) noexcept;

// dscores [batch,tq,tk] -> grads.dqp, grads.dkp, grads.dv (overwritten; dkp added to with
// grads.add_dkp); grads.dv_rows is scratch. Pairs with dscores == 0 (masked keys) are
// skipped.
void additive_scores_backward(const AdditiveScoreSpec& spec, const float* qp, const float* kp,
                              const float* v, const float* dscores,
                              AdditiveScoreGrads<float> grads) noexcept;

}  // namespace qkv::kernels
