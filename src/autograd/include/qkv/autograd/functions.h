// Differentiable functions: each mirrors an op in qkv/ops (same arguments, same shapes,
// same errors) on Variables, and records its backward on the tape (see variable.h). The
// registry name of each function is its C++ name.
#pragma once

#include "qkv/autograd/functions_recurrent.h"  // recurrent cells, concat/stack/select
#include "qkv/autograd/variable.h"
#include "qkv/ops/activation.h"
#include "qkv/ops/additive_scores.h"
#include "qkv/ops/cross_entropy.h"
#include "qkv/ops/dropout.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/ops/flash_attention_rows.h"
#include "qkv/ops/matmul.h"
#include "qkv/ops/normalize.h"
#include "qkv/ops/softmax.h"

namespace qkv::autograd {

// ---- linear algebra, elementwise, reductions, shapes (functions_linear.cpp) ----

// a [..., M, K], b [..., K, N] (see ops::matmul for the transpose flags) -> [..., M, N].
Variable matmul(const Variable& a, const Variable& b, const ops::MatmulOptions& options = {});
// a, b [...] equal shapes -> [...].
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
// x [N, E], weights {W_i [O_i, E]}, biases {b_i [O_i]} (one per weight, or none) ->
// [N, Σ O_i] = x [W_0; W_1; …]ᵀ + [b_0; b_1; …]: several projections of one input as ONE
// GEMM (self-attention's Q, K, V). Weights lying back to back in memory (a parameter
// arena that registers them in a row) are used in place as the stacked matrix; others
// are copied into one per call. Backward: one GEMM for dx, one for the stacked dW whose
// row blocks add into each weight's gradient. Errors as matmul's / add_bias's.
// x [M, K], w [N, K], bias [N] or undefined -> x · wᵀ + bias (ops::linear: the bias is
// the GEMM's starting C). Inside a PackedWeightsScope with grad mode off it runs the
// packed product and then adds the bias, as matmul + add_bias.
Variable linear(const Variable& x, const Variable& w, const Variable& bias);
Variable stacked_linear(const Variable& x, const std::vector<Variable>& weights,
                        const std::vector<Variable>& biases = {});
// The position-wise feed-forward block with a ReLU as one op: x [M, K], w1 [H, K], b1 [H],
// w2 [N, H], b2 [N] -> relu(x w1ᵀ + b1) w2ᵀ + b2 [M, N]. The ReLU is done where the first
// layer's GEMM writes its results (ops::linear_relu), its backward where the GEMM that
// makes the hidden gradient writes (ops::linear_backward_through_relu); only the ReLU's
// output [M, H] is kept for backward, not the pre-activation as well. The bits of
// linear(relu(linear(x, w1, b1)), w2, b2) in the value and every gradient. Without a
// backward to run (grad mode off, or no input requiring a gradient) it is that
// composition (decoding's packed weights apply). Errors as linear's.
Variable feed_forward_relu(const Variable& x, const Variable& w1, const Variable& b1,
                           const Variable& w2, const Variable& b2);
// x [...] -> s · x.
Variable scale(const Variable& x, double s);
// x [..., C], bias [C] -> x + bias.
Variable add_bias(const Variable& x, const Variable& bias);
// x [...] -> [] (sum / mean of all elements).
Variable sum(const Variable& x);
Variable mean(const Variable& x);
// x [..., C] -> [...].
Variable sum_last(const Variable& x);
// a [B, Tq, A], c [B, Tk, A] -> [B, Tq, Tk, A], out[b, i, j, :] = a[b, i, :] + c[b, j, :].
Variable pairwise_add(const Variable& a, const Variable& c);
// x -> a view with axes a and b swapped.
Variable transpose(const Variable& x, int axis_a, int axis_b);
// x -> x with `shape` (equal element count).
Variable reshape(const Variable& x, const Shape& shape);

// ---- neural-network ops (functions_nn.cpp) ----

// x [...] -> [...].
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable relu(const Variable& x);
Variable gelu(const Variable& x);
// x [..., C] -> [..., C]. The mask is a constant (no gradient into its bias).
Variable softmax(const Variable& x, const ops::SoftmaxMask& mask = {});
Variable log_softmax(const Variable& x, const ops::SoftmaxMask& mask = {});
// x [..., D] -> x / max(|x|, eps) per row (cosine attention; see ops::l2_normalize).
Variable l2_normalize(const Variable& x, double eps = ops::kL2NormalizeEps);
// x [..., C], gamma [C], beta [C] -> [..., C].
Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    double eps = 1e-5);
// table [V, E], ids [...] (integer ids as floats; a constant) -> [..., E].
Variable embedding(const Variable& table, const Tensor& ids);
// logits [..., V], targets [...] (class ids as floats; a constant) -> [] mean loss.
Variable cross_entropy(const Variable& logits, const Tensor& targets,
                       const ops::CrossEntropyOptions& options = {});
// hidden [..., E], weight [V, E], bias [V] (undefined: none), targets [...] (a constant)
// -> [] the mean loss of cross_entropy(hidden Wᵀ + b, targets), in row chunks so that
// the [..., V] logits and their gradient never exist whole (ops/linear_cross_entropy.h).
// The training loss of the models; the composed path stays the oracle. chunk_rows 0 is
// the default chunk (tests pass small ones to cross chunk boundaries).
Variable linear_cross_entropy(const Variable& hidden, const Variable& weight, const Variable& bias,
                              const Tensor& targets, const ops::CrossEntropyOptions& options = {},
                              int64_t chunk_rows = 0);
// x [...] -> [...] with inverted dropout (mask regenerated in backward from the options).
Variable dropout(const Variable& x, const ops::DropoutOptions& options);
// residual + dropout(x) as one op (a residual connection, ops::dropout_add): the dropped
// values are never stored, and backward hands dy to the residual as is (adopted, not
// copied, when it is the residual's first gradient). The bits of add(residual,
// dropout(x, options)) in the value and both gradients; that composition without a
// backward to run.
Variable dropout_add(const Variable& residual, const Variable& x,
                     const ops::DropoutOptions& options);
// Fused attention softmax(scale · q kᵀ, masked) v (see ops::flash_attention for shapes,
// masks and errors): q [B, H, Tq, D] or [B, Tq, D], k [.., Tk, D], v [.., Tk, Dv] ->
// [.., Tq, Dv]. Saves out and lse, and when backward will run (grad mode, an input that
// requires grad) the weights too if they fit options.keep_probs_up_to_bytes, which is
// ops::kFlashKeepProbsBytes unless the caller set it (beyond it backward recomputes them:
// O(T) memory).
// If lse is non-null it receives the log-sum-exp [.., Tq] (for flash_attention_weights).
Variable scaled_dot_attention(const Variable& q, const Variable& k, const Variable& v,
                              const ops::FlashAttentionOptions& options = {},
                              Tensor* lse = nullptr);
// scaled_dot_attention on packed rows (see ops::flash_attention_rows): q [Nq, Cq],
// k [Nk, Ck], v [Nk, Cv], any of them one Variable (a [N, 3E] projection for Q, K and V at
// columns 0, E, 2E) -> [Nq, H·D]. Each distinct input gets one gradient, written in place
// by the kernel: no per-head copies, no zeros where the heads cover every column.
Variable scaled_dot_attention_rows(const Variable& q, const Variable& k, const Variable& v,
                                   const ops::FlashRows& rows,
                                   const ops::FlashAttentionOptions& options = {});
// Fused additive (Bahdanau) scores Σ_a v_a tanh(qp_ia + kp_ja) (see ops::additive_scores):
// qp [B, Tq, A], kp [B, Tk, A], v [A] -> [B, Tq, Tk]. Saves only the inputs: backward
// recomputes tanh, so no [B, Tq, Tk, A] tensor is kept.
Variable additive_scores(const Variable& qp, const Variable& kp, const Variable& v);

}  // namespace qkv::autograd
