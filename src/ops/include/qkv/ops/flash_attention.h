// Fused scaled-dot attention (kernels/flash_attention.h) at the tensor level:
//   out = softmax(scale · q kᵀ, masked) v,  never materialising the [Tq, Tk] scores.
// F32 runs the fused FlashAttention-2 kernel, F64 its scalar reference twin.
//
// Shapes: q [B, H, Tq, D], k [B, H, Tk, D], v [B, H, Tk, Dv] (rank 4), or the same
// without the head axis, [B, Tq, D] etc. (rank 3, H = 1). Every dim >= 1; any D, Dv.
// Outputs: out [..., Tq, Dv], lse [..., Tq] (log-sum-exp of the masked scaled scores,
// -inf for a query that sees no key: its out row and gradients are 0, never NaN).
// Strided inputs are staged contiguously, except forward's k and v when each head's rows
// are dense and the heads equally spaced (a decoder's K/V cache with spare capacity
// along T, sliced to the positions so far): those are read in place.
#pragma once

#include <cstdint>
#include <span>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct FlashAttentionOptions {
  double scale = 1.0;  // finite
  // Query i sees key j iff j <= i + (Tk − Tq) (aligned at the end).
  bool causal = false;
  // [B] or empty: key j visible iff j < key_lengths[b] (shared by the H heads of b);
  // each in [0, Tk].
  std::span<const int64_t> key_lengths;
  // [B] or empty: query row b attends to row key_rows[b] of k and v, which then hold any
  // number of rows (each key_rows entry in [0, k's B)); empty: row b to row b. Forward
  // and weights only (backward raises ValueError): a beam's rows share their sentence's
  // cross-attention keys and values instead of each holding a copy.
  std::span<const int64_t> key_rows;
  // Forward (F32): keep the attention probabilities for backward when they take at most
  // this many bytes (kernels::flash_attention_probs_size floats, ~Tq·Tk per head): the
  // backward then skips recomputing them, a seventh of forward + backward's products and
  // all its exps. 0: never (flash attention's O(T) memory). See kFlashKeepProbsBytes.
  int64_t keep_probs_up_to_bytes = 0;
};

// The budget autograd's scaled_dot_attention gives keep_probs_up_to_bytes per call:
// training batches (a few hundred tokens per sentence) keep theirs, and so do 64 heads
// at T = 1024 (260 MiB: backward 9 % faster; PyTorch's math path holds ~1.5 GiB for that
// call); long sequences (8 heads at T = 8192 would need 2 GiB) recompute, in O(T) memory.
inline constexpr int64_t kFlashKeepProbsBytes = int64_t(512) << 20;

// The bytes flash_attention keeps for backward given keep_probs_up_to_bytes = budget, for
// bh = B·H heads of tq queries over tk keys (F32); 0 where it would recompute them. What
// training's memory estimate counts per attention call.
int64_t flash_attention_kept_bytes(int64_t bh, int64_t tq, int64_t tk, int64_t budget);

struct FlashAttentionResult {
  Tensor out;    // [..., Tq, Dv]
  Tensor lse;    // [..., Tq], saved for backward and weights
  Tensor probs;  // F32 [flash_attention_probs_size] when kept (see above), else undefined
};

struct FlashAttentionGradients {
  Tensor dq, dk, dv;
};

// Typed errors: ShapeError (ranks, mismatched B/H/T/D, empty dims, key_lengths or key_rows
// size), ValueError (mixed dtypes, key length outside [0, Tk], non-finite scale), IndexError
// (a key_rows entry outside k's rows).
FlashAttentionResult flash_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                     const FlashAttentionOptions& options = {});

// dout [..., Tq, Dv]; out, lse and (when it kept them) probs from flash_attention on the
// same inputs and options. ShapeError when probs is not the size that forward keeps.
FlashAttentionGradients flash_attention_backward(const TensorView& dout, const TensorView& q,
                                                 const TensorView& k, const TensorView& v,
                                                 const TensorView& out, const TensorView& lse,
                                                 const FlashAttentionOptions& options = {},
                                                 const TensorView& probs = {});

// Query rows [begin, end) of the attention weights; end = -1 means Tq.
struct RowRange {
  int64_t begin = 0;
  int64_t end = -1;
};

// Attention weights [..., end − begin, Tk] of the query rows asked for, recomputed from
// lse (0 where masked): for inspection, not needed by forward or backward. The cost is
// one tile pass over those rows only. ValueError unless 0 <= begin <= end <= Tq.
Tensor flash_attention_weights(const TensorView& q, const TensorView& k, const TensorView& lse,
                               const FlashAttentionOptions& options = {}, RowRange rows = {});

}  // namespace qkv::ops
