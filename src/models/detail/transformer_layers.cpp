#include "detail/transformer_layers.h"

#include <algorithm>

#include "detail/common.h"
#include "qkv/autograd/functions.h"

namespace qkv::models::detail {
namespace {

// x + dropout(sublayer output): the residual connection of every sub-layer, one op
// (nn::Dropout::add_to).
Variable residual(const Variable& x, const Variable& y, nn::Dropout& dropout) {
  return dropout.add_to(x, y);
}

// lengths [B] (or empty: every key) -> the key-padding mask of every head.
attention::MaskSpec key_padding(std::span<const int64_t> lengths) {
  return {.key_lengths = {lengths.begin(), lengths.end()}};
}

}  // namespace

EncoderLayer::EncoderLayer(nn::ParameterStore& store, const std::string& prefix, int64_t dim,
                           int64_t heads, int64_t ffn)
    : attn_norm_(store, nn::child_name(prefix, "self_attn_norm"), dim),
      attn_(make_multi_head(store, nn::child_name(prefix, "self_attn"), dim, heads)),
      ffn_norm_(store, nn::child_name(prefix, "ffn_norm"), dim),
      ffn_(store, nn::child_name(prefix, "ffn"), dim, ffn) {}

Variable EncoderLayer::forward(const Variable& x, const attention::PackedBatch& rows,
                               nn::Dropout& dropout) {
  // The rows' lengths mask the keys: a sequence's queries see its positions only.
  const Variable a = attn_.self_attend(attn_norm_.forward(x), rows, /*causal=*/false);
  const Variable h = residual(x, a, dropout);
  return residual(h, ffn_.forward(ffn_norm_.forward(h)), dropout);
}

DecoderLayer::DecoderLayer(nn::ParameterStore& store, const std::string& prefix, int64_t dim,
                           int64_t heads, int64_t ffn)
    : self_norm_(store, nn::child_name(prefix, "self_attn_norm"), dim),
      self_attn_(make_multi_head(store, nn::child_name(prefix, "self_attn"), dim, heads)),
      cross_norm_(store, nn::child_name(prefix, "cross_attn_norm"), dim),
      cross_attn_(make_multi_head(store, nn::child_name(prefix, "cross_attn"), dim, heads)),
      ffn_norm_(store, nn::child_name(prefix, "ffn_norm"), dim),
      ffn_(store, nn::child_name(prefix, "ffn"), dim, ffn) {}

Variable DecoderLayer::forward(const Variable& x, const attention::PackedBatch& target_rows,
                               const Variable& memory, const attention::PackedBatch& source_rows,
                               nn::Dropout& dropout) {
  // Causal: position i sees targets 0..i.
  const Variable s = self_attn_.self_attend(self_norm_.forward(x), target_rows, /*causal=*/true);
  Variable h = residual(x, s, dropout);
  const Variable c =
      cross_attn_.cross_attend(cross_norm_.forward(h), target_rows, memory, source_rows);
  h = residual(h, c, dropout);
  return residual(h, ffn_.forward(ffn_norm_.forward(h)), dropout);
}

void DecoderLayer::prepare(const Variable& memory, LayerCache& cache) const {
  const attention::KeyValueHeads kv = cross_attn_.project_key_values(memory);
  cache.cross_k = kv.keys.value();
  cache.cross_v = kv.values.value();
  cache.gathered_k = cache.gathered_v = Tensor();
  cache.gathered_origins.clear();
  cache.self_k.clear();
  cache.self_v.clear();
}

Variable DecoderLayer::step(const Variable& x, LayerCache& cache, std::span<const int64_t> lengths,
                            std::span<const int64_t> origins, nn::Dropout& dropout,
                            Tensor* weights) {
  // [B, 1, E]: only the newest position is projected; the cache holds the others.
  const attention::QueryKeyValueHeads self = self_attn_.project_self(self_norm_.forward(x));
  cache.self_k.append(self.keys.value());
  cache.self_v.append(self.values.value());
  // One query at the end of the sequence sees every cached position: no mask needed. The
  // cache slices are read in place (MultiHeadAttention::attend_heads without gradients).
  const Variable s = self_attn_
                         .attend_heads(self.queries, Variable(cache.self_k.view()),
                                       Variable(cache.self_v.view()), {})
                         .output;
  Variable h = residual(x, s, dropout);
  attention::MultiHeadOptions options;
  options.need_weights = weights != nullptr;
  options.head_weights = attention::HeadWeights::PerHead;
  // The fused kernel reads each row's source keys and values in place; the path that
  // returns weights takes them gathered, one row per query row, again only when the rows'
  // sources have changed since the last gather (a sentence finished, the first step).
  Tensor keys = cache.cross_k, values = cache.cross_v;
  if (weights) {
    if (!std::ranges::equal(cache.gathered_origins, origins)) {
      cache.gathered_k = gather_rows(cache.cross_k, origins);
      cache.gathered_v = gather_rows(cache.cross_v, origins);
      cache.gathered_origins.assign(origins.begin(), origins.end());
    }
    keys = cache.gathered_k;
    values = cache.gathered_v;
  } else {
    options.key_rows = origins;
  }
  const attention::MultiHeadOutput c =
      cross_attn_.attend_heads(cross_attn_.project_queries(cross_norm_.forward(h)), Variable(keys),
                               Variable(values), key_padding(lengths), options);
  if (weights) {
    const Tensor w = c.weights.value().contiguous();  // [B, H, 1, Ts]
    *weights = w.reshape({w.dim(0), w.dim(1), w.dim(3)});
  }
  h = residual(h, c.output, dropout);
  return residual(h, ffn_.forward(ffn_norm_.forward(h)), dropout);
}

}  // namespace qkv::models::detail
