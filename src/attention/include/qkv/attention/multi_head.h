// Multi-head attention (Vaswani et al. 2017, sec. 3.2.2): project to Q, K, V, split the
// feature dimension E into H heads of Dh = E/H, scaled-dot attention per head, merge the
// heads and project: out = concat_h(softmax(Q_h K_hᵀ/sqrt(Dh)) V_h) W_o + b_o.
// Parameter layout follows PyTorch's nn.MultiheadAttention (x Wᵀ + b with W [E, E]; wq, wk,
// wv are the three row blocks of its in_proj_weight), so its weights load directly.
//
// The one multi-head attention of qkv: the Transformer runs it, library users call it.
// Two ways in, bitwise the same (forward runs project_self when query, key and value are
// one Variable, project_key_values when key and value are, else project_queries/keys/
// values; then attend_heads):
//   - forward(query, key, value, mask): project, attend, merge, project;
//   - the steps, for incremental decoding with a K/V projection cache:
//       project_queries / project_keys / project_values  x [B, T, E] -> heads [B, H, T, Dh]
//       project_self (self-attention) and project_key_values (cross-attention memory),
//       attend_heads(q, k, v, mask): pre-projected heads -> [B, Tq, E] after W_o.
//     A decoder keeps the K/V heads of past positions (a cache with spare capacity along
//     T: models/detail/kv_cache.h) and projects only its newest row; a beam reorders them
//     along B. Without gradients and weights, attend_heads hands the heads to the fused
//     kernel as they are, so a slice of such a cache is read in place, never copied.
// project_self and project_key_values run the Q/K/V (or K/V) projections of one input
// as ONE GEMM over the stacked weights (autograd::stacked_linear; without a copy when the
// weights lie back to back, as the Transformer registers them): equal to the separate
// project_* within float rounding (the GEMM sums in another order), not bitwise.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/attention/attention.h"
#include "qkv/base/rng.h"

namespace qkv::attention {

struct MultiHeadParams {
  autograd::Variable wq, wk, wv, wo;  // [E, E] each, applied as x Wᵀ
  autograd::Variable bq, bk, bv, bo;  // [E] each (undefined: no bias, like bias=False)
};

enum class HeadWeights { PerHead, Averaged };

struct MultiHeadOptions {
  bool need_weights = false;
  HeadWeights head_weights = HeadWeights::Averaged;
  // As AttentionOptions: the query rows whose weights are returned, and whether the
  // weights carry gradients (false: inspection, recomputed cheaply on the fused path).
  ops::RowRange weight_rows = {};
  bool weights_need_grad = false;
  // Passed to attend() (AttentionOptions::fused): the heads' context comes from the
  // fused kernel unless the mask has a bias or allowed tensor.
  bool fused = true;
  // attend_heads only, [B] or empty: query row b attends to row key_rows[b] of keys and
  // values, which then hold any number of rows (a beam's rows share their sentence's
  // cross-attention memory without copies). Inference only: without gradients and
  // without weights (ValueError otherwise); ops::FlashAttentionOptions::key_rows.
  std::span<const int64_t> key_rows;
};

struct MultiHeadOutput {
  autograd::Variable output;  // [B, Tq, E]
  // [B, H, rows, Tk] (PerHead) or [B, rows, Tk] (Averaged); rows as weight_rows.
  autograd::Variable weights;
};

// Projected heads, each [B, H, T, Dh] and contiguous (so a cache can concatenate them).
struct QueryKeyValueHeads {
  autograd::Variable queries, keys, values;
};
struct KeyValueHeads {
  autograd::Variable keys, values;
};

// A padded batch without its padding: sequence b's positions t < lengths[b] as the rows,
// in (b, t) order, of an [N, E] tensor, N = Σ lengths. Training runs the whole
// Transformer on these rows (its position-wise layers never see a padded position, and
// attention reads its heads in the projections' rows: MultiHeadAttention::self_attend).
struct PackedBatch {
  int64_t batch = 0, length = 0;  // B and T of the padded layout
  std::vector<int64_t> rows;      // each packed row's index b·T + t in the padded [B·T]
  std::vector<int64_t> lengths;   // [B]: sequence b's rows
  // lengths [B], each in [1, length] (else ValueError naming it).
  static PackedBatch of(std::span<const int64_t> lengths, int64_t length);
  // No padding: every padded row is a packed row (packing is then a reshape).
  bool dense() const noexcept { return int64_t(rows.size()) == batch * length; }
};

class MultiHeadAttention {
 public:
  // E divisible by heads (else ConfigError). Xavier-uniform weights, zero biases, drawn
  // from rng (float32).
  MultiHeadAttention(int64_t embed_dim, int64_t heads, Rng& rng);
  // Takes the caller's parameters (e.g. views into a model's parameter arena): gradients
  // flow into them. wq..wo [E, E], biases [E] or undefined, one dtype (else typed Error).
  MultiHeadAttention(MultiHeadParams params, int64_t heads);

  // query [B, Tq, E], key/value [B, Tk, E] -> output [B, Tq, E]. No residual: the
  // caller adds it (pre-LN Transformer blocks do x + attn(norm(x))). mask in batch
  // terms (key_lengths [B]); it applies to every head.
  MultiHeadOutput forward(const autograd::Variable& query, const autograd::Variable& key,
                          const autograd::Variable& value, const MaskSpec& mask,
                          const MultiHeadOptions& options = {}) const;

  // x [B, T, E] -> [B, H, T, Dh]: x Wᵀ + b, head h = features [h·Dh, (h+1)·Dh).
  autograd::Variable project_queries(const autograd::Variable& x) const;
  autograd::Variable project_keys(const autograd::Variable& x) const;
  autograd::Variable project_values(const autograd::Variable& x) const;
  // Self-attention: the three projections of one x [B, T, E].
  QueryKeyValueHeads project_self(const autograd::Variable& x) const;
  // Cross-attention: keys and values of memory [B, Tk, E], computed once per source.
  KeyValueHeads project_key_values(const autograd::Variable& memory) const;

  // queries [B, H, Tq, Dh], keys/values [B, H, Tk, Dh] (from the project_* above or a
  // cache of them) -> output [B, Tq, E] after W_o; weights as forward's.
  MultiHeadOutput attend_heads(const autograd::Variable& queries, const autograd::Variable& keys,
                               const autograd::Variable& values, const MaskSpec& mask,
                               const MultiHeadOptions& options = {}) const;

  // Packed rows (PackedBatch) end to end, the Transformer's training path: x [N, E] ->
  // [N, E] after W_o, the same values at the real positions as forward() on the padded
  // batch. One GEMM projects the rows, the fused kernel reads each head where that GEMM
  // left it and writes the merged heads where W_o reads them (ops::flash_attention_rows):
  // no padded [B, H, T, Dh] heads, no copies into them or out of them, either way.
  // Self-attention within each sequence; causal: position t sees positions 0..t.
  autograd::Variable self_attend(const autograd::Variable& x, const PackedBatch& rows,
                                 bool causal) const;
  // Cross-attention: x's rows (rows) attend to every real position of memory [Ns, E]
  // (memory_rows, the same batch).
  autograd::Variable cross_attend(const autograd::Variable& x, const PackedBatch& rows,
                                  const autograd::Variable& memory,
                                  const PackedBatch& memory_rows) const;

  const MultiHeadParams& params() const noexcept { return params_; }
  int64_t heads() const noexcept { return heads_; }
  int64_t embed_dim() const noexcept { return params_.wq.value().dim(0); }

 private:
  struct Context {
    autograd::Variable heads;    // [B·H, Tq, Dh], the heads' context
    autograd::Variable weights;  // as MultiHeadOutput::weights
  };
  Context attend_context(const autograd::Variable& queries, const autograd::Variable& keys,
                         const autograd::Variable& values, const MaskSpec& mask,
                         const MultiHeadOptions& options) const;

  MultiHeadParams params_;
  int64_t heads_;
};

}  // namespace qkv::attention
