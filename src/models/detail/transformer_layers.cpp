#include "detail/transformer_layers.h"

#include <array>

#include "qkv/autograd/functions.h"
#include "qkv/ops/sequence.h"

namespace qkv::models::detail {
namespace {

// x + dropout(sublayer output): the residual connection of every sub-layer.
Variable residual(const Variable& x, const Variable& y, nn::Dropout& dropout) {
  return autograd::add(x, dropout.forward(y));
}

// cache [B, H, t, Dh] (or undefined) and the newest row [B, H, 1, Dh] -> [B, H, t + 1, Dh].
// A copy of O(t) elements per step, no recomputation.
Tensor append(const Tensor& cache, const Tensor& row) {
  if (!cache.defined()) return row.contiguous();
  const std::array<TensorView, 2> parts{cache.view(), row.view()};
  return ops::concat(parts, 2);
}

}  // namespace

EncoderLayer::EncoderLayer(nn::ParameterStore& store, const std::string& prefix, int64_t dim,
                           int64_t heads, int64_t ffn)
    : attn_norm_(store, nn::child_name(prefix, "self_attn_norm"), dim),
      attn_(store, nn::child_name(prefix, "self_attn"), dim, heads),
      ffn_norm_(store, nn::child_name(prefix, "ffn_norm"), dim),
      ffn_(store, nn::child_name(prefix, "ffn"), dim, ffn) {}

Variable EncoderLayer::forward(const Variable& x, std::span<const int64_t> lengths,
                               nn::Dropout& dropout) {
  const Variable n = attn_norm_.forward(x);
  const Variable a =
      attn_.attend(attn_.queries(n), attn_.keys(n), attn_.values(n), lengths, false, false).output;
  const Variable h = residual(x, a, dropout);
  return residual(h, ffn_.forward(ffn_norm_.forward(h)), dropout);
}

DecoderLayer::DecoderLayer(nn::ParameterStore& store, const std::string& prefix, int64_t dim,
                           int64_t heads, int64_t ffn)
    : self_norm_(store, nn::child_name(prefix, "self_attn_norm"), dim),
      self_attn_(store, nn::child_name(prefix, "self_attn"), dim, heads),
      cross_norm_(store, nn::child_name(prefix, "cross_attn_norm"), dim),
      cross_attn_(store, nn::child_name(prefix, "cross_attn"), dim, heads),
      ffn_norm_(store, nn::child_name(prefix, "ffn_norm"), dim),
      ffn_(store, nn::child_name(prefix, "ffn"), dim, ffn) {}

Variable DecoderLayer::forward(const Variable& x, const Variable& memory,
                               std::span<const int64_t> lengths, nn::Dropout& dropout) {
  // Causal: position i sees targets 0..i. Target padding needs no mask: it comes after
  // every real position, so causality already hides it from them.
  const Variable n = self_norm_.forward(x);
  const Variable s =
      self_attn_
          .attend(self_attn_.queries(n), self_attn_.keys(n), self_attn_.values(n), {}, true, false)
          .output;
  Variable h = residual(x, s, dropout);
  const Variable c =
      cross_attn_
          .attend(cross_attn_.queries(cross_norm_.forward(h)), cross_attn_.keys(memory),
                  cross_attn_.values(memory), lengths, false, false)
          .output;
  h = residual(h, c, dropout);
  return residual(h, ffn_.forward(ffn_norm_.forward(h)), dropout);
}

void DecoderLayer::prepare(const Variable& memory, LayerCache& cache) const {
  cache.cross_k = cross_attn_.keys(memory).value();
  cache.cross_v = cross_attn_.values(memory).value();
  cache.self_k = Tensor();
  cache.self_v = Tensor();
}

Variable DecoderLayer::step(const Variable& x, LayerCache& cache, std::span<const int64_t> lengths,
                            nn::Dropout& dropout, Tensor* weights) {
  const Variable n = self_norm_.forward(x);  // [B, 1, E]: only the newest position
  cache.self_k = append(cache.self_k, self_attn_.keys(n).value());
  cache.self_v = append(cache.self_v, self_attn_.values(n).value());
  // One query at the end of the sequence sees every cached position: no mask needed.
  const Variable s = self_attn_
                         .attend(self_attn_.queries(n), Variable(cache.self_k),
                                 Variable(cache.self_v), {}, false, false)
                         .output;
  Variable h = residual(x, s, dropout);
  const MultiHeadBlock::Output c =
      cross_attn_.attend(cross_attn_.queries(cross_norm_.forward(h)), Variable(cache.cross_k),
                         Variable(cache.cross_v), lengths, false, weights != nullptr);
  if (weights) {
    const Tensor& w = c.weights;  // [B, H, 1, Ts]
    *weights = w.reshape({w.dim(0), w.dim(1), w.dim(3)});
  }
  h = residual(h, c.output, dropout);
  return residual(h, ffn_.forward(ffn_norm_.forward(h)), dropout);
}

}  // namespace qkv::models::detail
