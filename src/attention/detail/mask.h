// Private: MaskSpec -> one additive float bias over the scores.
#pragma once

#include <cstdint>
#include <vector>

#include "qkv/attention/attention.h"

namespace qkv::attention::detail {

struct ScoreDims {
  int64_t batch = 0, queries = 0, keys = 0;  // B, Tq, Tk
};

// The additive bias [B, Tq, Tk] in `dtype` that softmax adds to the scores: the user bias
// (broadcast over B when [Tq, Tk]) where a key is visible, −inf where key_lengths, causal
// or allowed hides it. Undefined when the spec masks nothing (no bias tensor needed).
// Validates the spec: key_lengths size B (ShapeError) and values in [0, Tk] (ValueError);
// bias/allowed [Tq, Tk] or [B, Tq, Tk] (ShapeError); bias same dtype as the scores
// (ValueError), no NaN or +inf (ValueError); allowed values exactly 0 or 1 (ValueError).
Tensor mask_bias(const MaskSpec& mask, const ScoreDims& dims, DType dtype);

// Validates key_lengths against dims (as mask_bias does) without building any bias.
void check_key_lengths(const std::vector<int64_t>& lengths, const ScoreDims& dims);

// True when the mask is a per-query prefix of the keys (only key_lengths and causal):
// what the fused kernel supports.
inline bool prefix_mask(const MaskSpec& mask) {
  return !mask.bias.defined() && !mask.allowed.defined();
}

// bias [B, Tq, Tk] -> [B·H, Tq, Tk]: each batch row repeated for its H heads (rows b·H + h).
Tensor repeat_per_head(const Tensor& bias, int64_t heads);

}  // namespace qkv::attention::detail
