// Multi-head attention (Vaswani et al. 2017, sec. 3.2.2): project to Q, K, V, split the
// feature dimension E into H heads of E/H, scaled-dot attention per head, merge the
// heads and project: out = concat_h(softmax(Q_h K_hᵀ/sqrt(E/H)) V_h) W_o + b_o.
// Parameter layout follows PyTorch's nn.MultiheadAttention (x Wᵀ + b with W [E, E]),
// so its weights load directly.
#pragma once

#include <cstdint>

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
};

struct MultiHeadOutput {
  autograd::Variable output;  // [B, Tq, E]
  // [B, H, rows, Tk] (PerHead) or [B, rows, Tk] (Averaged); rows as weight_rows.
  autograd::Variable weights;
};

class MultiHeadAttention {
 public:
  // E divisible by heads (else ConfigError). Xavier-uniform weights, zero biases, drawn
  // from rng (float32).
  MultiHeadAttention(int64_t embed_dim, int64_t heads, Rng& rng);
  MultiHeadAttention(MultiHeadParams params, int64_t heads);

  // query [B, Tq, E], key/value [B, Tk, E] -> output [B, Tq, E]. No residual: the
  // caller adds it (pre-LN Transformer blocks do x + attn(norm(x))).
  MultiHeadOutput forward(const autograd::Variable& query, const autograd::Variable& key,
                          const autograd::Variable& value, const MaskSpec& mask,
                          const MultiHeadOptions& options = {}) const;

  const MultiHeadParams& params() const noexcept { return params_; }
  int64_t heads() const noexcept { return heads_; }

 private:
  MultiHeadParams params_;
  int64_t heads_;
};

}  // namespace qkv::attention
