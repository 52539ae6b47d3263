// Multi-head attention for the Transformer (Vaswani et al. 2017, sec. 3.2.2) with the
// projections separate from the attention, so a decoder can keep projected keys and
// values between steps (attention::MultiHeadAttention projects its key/value inputs on
// every call). Heads are folded into the batch, [B, H, T, Dh] -> [B·H, T, Dh], for
// attention::attend()'s fused scaled-dot path. Parameters: prefix.{q,k,v,out}_proj
// (weight [E, E], bias [E]), as PyTorch's layers name them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "qkv/nn/linear.h"

namespace qkv::models::detail {

class MultiHeadBlock {
 public:
  MultiHeadBlock(nn::ParameterStore& store, const std::string& prefix, int64_t dim, int64_t heads);

  // x [B, T, E] -> [B, H, T, Dh] (contiguous).
  autograd::Variable queries(const autograd::Variable& x) const { return split(q_proj_, x); }
  autograd::Variable keys(const autograd::Variable& x) const { return split(k_proj_, x); }
  autograd::Variable values(const autograd::Variable& x) const { return split(v_proj_, x); }

  struct Output {
    autograd::Variable output;  // [B, Tq, E], after the output projection
    Tensor weights;             // [B, H, Tq, Tk] when asked for (inspection, no gradient)
  };
  // q [B, H, Tq, Dh], k, v [B, H, Tk, Dh]; key_lengths [B] or empty; causal as in
  // attention::MaskSpec (aligned at the end).
  Output attend(const autograd::Variable& q, const autograd::Variable& k,
                const autograd::Variable& v, std::span<const int64_t> key_lengths, bool causal,
                bool want_weights) const;

 private:
  autograd::Variable split(const nn::Linear& proj, const autograd::Variable& x) const;

  int64_t dim_, heads_;
  nn::Linear q_proj_, k_proj_, v_proj_, out_proj_;
};

}  // namespace qkv::models::detail
