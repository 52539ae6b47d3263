// Attention as the seed documents describe it, composed from differentiable ops:
//   1. score every key against the query (dot, scaled dot, cosine, bilinear "general",
//      additive MLP),
//   2. normalise with a masked softmax into weights that sum to 1 over visible keys,
//   3. weighted sum of the values: the context vector.
// This composed path is the oracle that fused kernels are tested against.
//
// Shapes: B batch, Tq queries, Tk keys, Dq/Dk/Dv feature sizes, A additive hidden size.
#pragma once

#include <cstdint>
#include <vector>

#include "qkv/autograd/variable.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/tensor/tensor.h"

namespace qkv::attention {

// Which keys each query may attend to. Every field narrows the visible set; a key is
// visible when all of them allow it. A query with no visible key gets a zero context
// and zero gradients (never NaN).
struct MaskSpec {
  // [B] valid key count per batch row (key padding): key j visible iff j < key_lengths[b].
  // Empty: all Tk keys. Each value in [0, Tk].
  std::vector<int64_t> key_lengths;
  // Query i may attend key j iff j <= i + (Tk − Tq) (aligned at the end, so a decoder
  // step with Tq = 1 sees every key).
  bool causal = false;
  // Optional additive float bias, [Tq, Tk] or [B, Tq, Tk] (same dtype as the scores);
  // -inf masks a key. A constant: no gradient.
  Tensor bias;
  // Optional boolean "may attend" mask as 0/1 floats, [Tq, Tk] or [B, Tq, Tk]:
  // 1 = visible (true), 0 = masked. Any other value is a ValueError.
  Tensor allowed;
};

enum class ScoreKind {
  Dot,        // q·k
  ScaledDot,  // s·q·k, s = 1/sqrt(Dk) unless AttentionOptions::scale is set
  Cosine,     // q·k / (|q| |k|) / temperature
  General,    // qᵀ W k (Luong), W [Dq, Dk]
  Additive,   // vᵀ tanh(W q + U k + b) (Bahdanau), W [Dq, A], U [Dk, A], b [A], v [A]
};

// Learned parameters of the score function (unused fields stay undefined).
struct ScoreParams {
  autograd::Variable w;  // General: [Dq, Dk]; Additive: [Dq, A]
  autograd::Variable u;  // Additive: [Dk, A]
  autograd::Variable b;  // Additive: [A] (optional: undefined means no bias)
  autograd::Variable v;  // Additive: [A]
};

struct AttentionOptions {
  ScoreKind kind = ScoreKind::ScaledDot;
  double scale = 0.0;        // ScaledDot: 0 means 1/sqrt(Dk)
  double temperature = 1.0;  // Cosine: scores are divided by it (> 0)
  // Return the attention weights too (AttentionOutput::weights).
  bool need_weights = false;
  // Which query rows' weights to return (default all): weights are [B, rows, Tk].
  // A decoder that only shows the newest step asks for {Tq − 1, Tq}.
  ops::RowRange weight_rows = {};
  // false (default): the weights are for inspection (alignments, heatmaps) and carry no
  // gradient. On the fused path they are then recomputed from the kernel's saved
  // log-sum-exp for the rows asked for only, so asking for them never forces the slow
  // path. true: the weights are differentiable (callers put them in a loss, e.g. a
  // coverage penalty); on the dot kinds that costs the composed score + softmax.
  bool weights_need_grad = false;
  // Allow the fused kernels where they compute the same function; false forces the
  // composed path (the oracle, which materialises every intermediate). Fused:
  //   - Dot (scale 1), ScaledDot (scale as above) and Cosine (q, k l2-normalised first,
  //     scale 1/temperature) with a mask of only key_lengths and/or causal (no bias, no
  //     allowed): the context from autograd::scaled_dot_attention (FlashAttention-2
  //     style, O(T) memory, no [Tq, Tk] tensor);
  //   - Additive, any mask: scores from autograd::additive_scores (no [B, Tq, Tk, A]
  //     tensor), then the masked softmax and the weighted sum as usual.
  // Both paths agree within float32 rounding (float64 runs the reference twins).
  bool fused = true;
};

struct AttentionOutput {
  autograd::Variable context;  // [B, Tq, Dv]
  // [B, rows, Tk] when need_weights (rows: AttentionOptions::weight_rows), else
  // undefined. Rows sum to 1 over the visible keys (all 0 for a fully masked query).
  autograd::Variable weights;
};

// q [B, Tq, Dq], k [B, Tk, Dk], v [B, Tk, Dv] (Dq == Dk except for General and
// Additive). Self-attention passes the same sequence as q, k and v; cross-attention
// passes any memory as k and v. Tq == 1 is a decoder step.
AttentionOutput attend(const autograd::Variable& q, const autograd::Variable& k,
                       const autograd::Variable& v, const MaskSpec& mask, const ScoreParams& params,
                       const AttentionOptions& options);

}  // namespace qkv::attention
