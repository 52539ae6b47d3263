// Fused ("flash") scaled-dot attention, FlashAttention-2 style (Dao 2023, Algorithms 1
// and 2): O = softmax(scale · Q Kᵀ, masked) V without ever materialising the tq × tk
// score matrix. Memory is O(T): besides the outputs only lse [bh, tq] (and delta
// [bh, tq] in backward) is kept, unless the caller asks to keep the probabilities
// (below); tiles of scores (and the query tile transposed, for head dims up to 128 at
// once) live on the stack: under 100 KiB per call and thread.
//
// Layouts (all contiguous, row-major):
//   q [bh, tq, dh], k [bh, tk, dh], v [bh, tk, dv], out/dout [bh, tq, dv], lse [bh, tq];
// or, with spec.rows, packed rows: each head read and written in the [N, C] rows a
// training batch's projections leave (FlashAttentionRows; lse stays [bh, tq]).
// The spec (masks, scale) is FlashAttentionSpec in reference/flash_attention.h.
// Any dh, dv >= 1 is supported (tiles are sized in keys and queries, not head dims).
// Results are bitwise identical for any thread count: forward runs fixed
// (head, query-tile) chunks, backward and weights one chunk per head.
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/flash_attention.h"

namespace qkv::kernels {

// out [bh,tq,dv], lse [bh,tq] (log Σ exp of the scaled visible scores; -inf for a row
// with no visible key, whose out row is 0). probs: see "Kept probabilities" below.
void flash_attention_forward(const FlashAttentionSpec& spec, const float* q, const float* k,
                             const float* v, float* out, float* lse,
                             float* probs = nullptr) noexcept;

// Gradients given out and lse from forward and dout [bh,tq,dv]. delta [bh,tq] is caller
// scratch (receives rowsum(dout ⊙ out)). dq [bh,tq,dh], dk [bh,tk,dh], dv [bh,tk,dv] are
// overwritten. Rows with no visible key contribute nothing (zero, never NaN).
void flash_attention_backward(const FlashAttentionSpec& spec, const float* q, const float* k,
                              const float* v, const float* out, const float* lse, const float* dout,
                              float* delta, float* dq, float* dk, float* dv,
                              const float* probs = nullptr) noexcept;

// Kept probabilities. The backward pass recomputes P = exp(S − lse) tile by tile: one of
// its five tile products (seven in forward + backward) and every exp. A forward given
// `probs` (flash_attention_probs_size(spec) floats) also keeps P there, in the tile
// layout the backward reads (each tile's exp(S − m_tile) from the online softmax and a
// row of factors exp(m_tile − m) / l); a backward given the same `probs` forms P from
// them instead: a seventh fewer products and no exps, for Tq × Tk floats of memory (the
// caller's budget decides; see ops::FlashAttentionOptions::keep_probs_up_to_bytes). P so
// formed differs from exp(S − lse) in the last bits, and so do the gradients from the
// recomputing backward's; either way they are the same for any thread count.
// The size: per (head, tile of 64 queries, tile of 64 keys) one slot of
// (min(64, tk) + 1) × min(64, tq rounded up to 16) floats. A forward that keeps them runs
// one query (tq = 1, a decoding step's shape) through the tiles too, instead of its
// single-query path.
int64_t flash_attention_probs_size(const FlashAttentionSpec& spec) noexcept;

// Attention weights of query rows [row_begin, row_end) of every head, recomputed from
// lse: p [bh, row_end − row_begin, tk] (0 where masked, all 0 for a fully masked row).
void flash_attention_weights(const FlashAttentionSpec& spec, const float* q, const float* k,
                             const float* lse, int64_t row_begin, int64_t row_end,
                             float* p) noexcept;

}  // namespace qkv::kernels
