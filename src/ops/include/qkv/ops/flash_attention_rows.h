// Fused scaled-dot attention on packed rows: the heads read and written where a
// training batch's projections lie, [N, C] rows with the H heads side by side, instead of
// being copied into [B, H, T, D] (zero at padded positions) and back. Same kernel, same
// arithmetic per query as ops::flash_attention on the padded heads.
//
// A packed batch: sequence b's positions t < lengths[b] as consecutive rows, sequences in
// order (N = Σ lengths). Head h of a row is its columns [column + h·D, column + (h+1)·D).
#pragma once

#include <cstdint>
#include <span>

#include "qkv/ops/flash_attention.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct FlashRows {
  int64_t heads = 1;
  int64_t head_dim = 0;  // D of q, k and v (and of out)
  // [B] each: the rows of sequence b in q (and out) and in k and v. Every key of a
  // sequence is visible to its queries unless causal hides it.
  std::span<const int64_t> query_lengths, key_lengths;
  // The first column of the heads in q, k and v (in [0, C − H·D]).
  int64_t q_column = 0, k_column = 0, v_column = 0;
};

// q [Nq, Cq], k [Nk, Ck], v [Nk, Cv] with Nq = Σ query_lengths, Nk = Σ key_lengths ->
// out [Nq, H·D] (the heads merged, as W_o takes them) and lse [B·H, Tq] with Tq the
// longest query length (−inf past each sequence's queries). options: scale, causal
// (query i of a sequence sees its keys j <= i; query and key lengths equal) and
// keep_probs_up_to_bytes as flash_attention's, sized for [B·H, Tq, Tk]; key_lengths and
// key_rows must be empty (the rows' lengths mask the keys). Typed errors name the field.
FlashAttentionResult flash_attention_rows(const TensorView& q, const TensorView& k,
                                          const TensorView& v, const FlashRows& rows,
                                          const FlashAttentionOptions& options = {});

// The gradients given dout [Nq, H·D] and flash_attention_rows' out, lse and probs on the
// same inputs: the head columns of every row of dq, dk and dv (contiguous, shaped as q,
// k and v, possibly one tensor when q, k and v are) are overwritten; their other columns
// are not touched.
void flash_attention_rows_backward(const TensorView& dout, const TensorView& q, const TensorView& k,
                                   const TensorView& v, const TensorView& out,
                                   const TensorView& lse, const FlashRows& rows,
                                   const FlashAttentionOptions& options, const TensorView& probs,
                                   const Tensor& dq, const Tensor& dk, const Tensor& dv);

}  // namespace qkv::ops
