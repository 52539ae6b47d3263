// The Transformer's pre-LN layers (Vaswani et al. 2017 with the LayerNorm moved before
// each sub-layer, Xiong et al. 2020; as in tensor2tensor and fairseq's normalize_before):
//   encoder:  x += drop(SelfAttn(LN(x)));  x += drop(FFN(LN(x)))
//   decoder:  x += drop(CausalSelfAttn(LN(x)));  x += drop(CrossAttn(LN(x), memory));
//             x += drop(FFN(LN(x)))
// and a final LayerNorm after each stack. Dropout on each sub-layer's output before the
// residual sum and on embeddings + positions (sec. 5.4); none inside attention or FFN.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "detail/kv_cache.h"
#include "detail/multi_head.h"
#include "qkv/nn/dropout.h"
#include "qkv/nn/feed_forward.h"
#include "qkv/nn/layer_norm.h"

namespace qkv::models::detail {

using autograd::Variable;

class EncoderLayer {
 public:
  EncoderLayer(nn::ParameterStore& store, const std::string& prefix, int64_t dim, int64_t heads,
               int64_t ffn);
  // x [N, E]: the real positions of the padded batch `rows` (attention::PackedBatch)
  // -> [N, E].
  Variable forward(const Variable& x, const attention::PackedBatch& rows, nn::Dropout& dropout);

 private:
  nn::LayerNorm attn_norm_;
  attention::MultiHeadAttention attn_;
  nn::LayerNorm ffn_norm_;
  nn::FeedForward ffn_;
};

// One decoder layer's cache for incremental decoding: the self-attention keys and values
// of every position so far (projections of the normalised inputs, so a step projects
// only its own row; kv_cache.h) and the cross-attention keys and values of the memory,
// one row per source sentence: a step's row b reads row origins[b] of them (step()), so
// a beam's rows share them and a beam reorder never copies them.
struct LayerCache {
  KvCache self_k, self_v;   // [B, H, t, Dh] after t steps
  Tensor cross_k, cross_v;  // [sources, H, Ts, Dh]
  // Steps that return attention weights read cross_k / cross_v gathered to one row per
  // step row: kept while the rows' sources stay the same.
  Tensor gathered_k, gathered_v;  // [B, H, Ts, Dh]
  std::vector<int64_t> gathered_origins;
};

class DecoderLayer {
 public:
  DecoderLayer(nn::ParameterStore& store, const std::string& prefix, int64_t dim, int64_t heads,
               int64_t ffn);

  // Teacher forcing on packed rows: x [Nt, E] (the real target positions, target_rows),
  // memory [Ns, E] (the encoder's normalised output at the real source positions,
  // source_rows) -> [Nt, E].
  Variable forward(const Variable& x, const attention::PackedBatch& target_rows,
                   const Variable& memory, const attention::PackedBatch& source_rows,
                   nn::Dropout& dropout);

  // The cross-attention keys and values of memory [B, Ts, E], computed once per source.
  void prepare(const Variable& memory, LayerCache& cache) const;
  // One step: x [B, 1, E] (the newest position) -> [B, 1, E]; appends this position's keys
  // and values to the cache. Row b attends to source row origins[b] of the cache's cross
  // keys and values, masked to lengths[b]. weights: when non-null, receives the
  // cross-attention weights [B, H, Ts].
  Variable step(const Variable& x, LayerCache& cache, std::span<const int64_t> lengths,
                std::span<const int64_t> origins, nn::Dropout& dropout, Tensor* weights);

 private:
  nn::LayerNorm self_norm_;
  attention::MultiHeadAttention self_attn_;
  nn::LayerNorm cross_norm_;
  attention::MultiHeadAttention cross_attn_;
  nn::LayerNorm ffn_norm_;
  nn::FeedForward ffn_;
};

}  // namespace qkv::models::detail
