// Multi-head attention as projections around the composed scaled-dot attend().
#include "qkv/attention/multi_head.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>
#include <vector>

#include "detail/mask.h"
#include "qkv/autograd/functions.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/ops/flash_attention_rows.h"

namespace qkv::attention {
namespace {

using autograd::Variable;

// Xavier/Glorot uniform (Glorot & Bengio 2010, eq. 16): U(−a, a), a = sqrt(6 / (fan_in +
// fan_out)), so activations and gradients keep their variance through the projection.
Variable xavier_uniform(int64_t rows, int64_t cols, Rng& rng) {
  const float a = float(std::sqrt(6.0 / double(rows + cols)));
  Tensor w = Tensor::empty({rows, cols}, DType::F32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = rng.uniform(-a, a);
  return Variable(w, true);
}

void check_config(int64_t embed_dim, int64_t heads) {
  QKV_CHECK(embed_dim > 0 && heads > 0 && embed_dim % heads == 0, ConfigError,
            "MultiHeadAttention: embed_dim ", embed_dim, " is not a positive multiple of heads ",
            heads);
}

// x [N, E] holding the real rows of `rows`' padded batch, else a typed Error naming it.
void check_packed(const char* name, const Variable& x, const PackedBatch& rows, const Tensor& wq) {
  const int64_t e = wq.dim(0);
  QKV_CHECK(x.defined(), ValueError, "MultiHeadAttention: ", name, " is undefined");
  const Tensor& t = x.value();
  QKV_CHECK(
      t.rank() == 2 && t.dim(1) == e && t.dim(0) == int64_t(rows.rows.size()) && t.numel() > 0,
      ShapeError, "MultiHeadAttention: packed ", name, " ", describe(t),
      " is not a non-empty [N = ", rows.rows.size(), " packed rows, E = ", e, "]");
  QKV_CHECK(int64_t(rows.lengths.size()) == rows.batch, ValueError, "MultiHeadAttention: ", name,
            "'s PackedBatch has ", rows.lengths.size(), " lengths for B = ", rows.batch,
            " (make it with PackedBatch::of)");
  QKV_CHECK(t.dtype() == wq.dtype(), ValueError, "MultiHeadAttention: ", name, " ", describe(t),
            " has another dtype than the parameters (", dtype_name(wq.dtype()), ")");
}

void check_param(std::string_view name, const Variable& p, const Shape& expected, DType dtype,
                 bool optional) {
  if (optional && !p.defined()) return;
  QKV_CHECK(p.defined(), ConfigError, "MultiHeadAttention: params.", name, " is undefined");
  QKV_CHECK(p.value().shape() == expected, ShapeError, "MultiHeadAttention: params.", name, " ",
            describe(p.value()), " should be ", expected);
  QKV_CHECK(p.value().dtype() == dtype, ValueError, "MultiHeadAttention: params.", name, " ",
            describe(p.value()), " has another dtype than params.wq (", dtype_name(dtype), ")");
}

// x [B, T, E] in the parameters' dtype, else a typed Error naming the input.
void check_input(const char* name, const Variable& x, const Tensor& wq) {
  const int64_t e = wq.dim(0);
  QKV_CHECK(x.defined(), ValueError, "MultiHeadAttention: ", name, " is undefined");
  const Tensor& t = x.value();
  QKV_CHECK(t.rank() == 3 && t.dim(2) == e && t.numel() > 0, ShapeError,
            "MultiHeadAttention: ", name, " ", describe(t), " is not a non-empty [B, T, E = ", e,
            "]");
  QKV_CHECK(t.dtype() == wq.dtype(), ValueError, "MultiHeadAttention: ", name, " ", describe(t),
            " has another dtype than the parameters (", dtype_name(wq.dtype()), ")");
}

// y [B·T, n·E] (rows of the padded layout) -> n heads [B, H, T, Dh], part i being
// columns [i·E, (i+1)·E). The transpose is copied once here: attend_heads() folds heads
// into the batch by a reshape, and a decoder's cache concatenates along T.
std::vector<Variable> split_heads(const Variable& y, int64_t batch, int64_t length, int64_t n,
                                  int64_t heads) {
  const int64_t dh = y.value().dim(1) / (n * heads);
  auto to_heads = [&](const Variable& bthd) {  // [B, T, H, Dh] -> [B, H, T, Dh]
    return autograd::reshape(autograd::transpose(bthd, 1, 2), {batch, heads, length, dh});
  };
  if (n == 1) return {to_heads(autograd::reshape(y, {batch, length, heads, dh}))};
  const Variable parts = autograd::reshape(y, {batch, length, n, heads, dh});
  std::vector<Variable> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(to_heads(autograd::select(parts, 2, i)));
  return out;
}

// Whether every / no bias is defined (stacked_linear takes all or none; a layer with
// only some biases keeps the per-weight path).
bool all_defined(const std::vector<Variable>& v) {
  return std::all_of(v.begin(), v.end(), [](const Variable& b) { return b.defined(); });
}
bool none_defined(const std::vector<Variable>& v) {
  return std::none_of(v.begin(), v.end(), [](const Variable& b) { return b.defined(); });
}

// Several weights with all or none of their biases: ONE GEMM over the stacked weights
// (autograd::stacked_linear: in place when the weights lie back to back, as
// make_multi_head registers them), equal to the GEMM per weight up to the summation
// order; mixed biases keep a GEMM per weight.
bool stacks(const std::vector<Variable>& weights, const std::vector<Variable>& biases) {
  return weights.size() > 1 && (all_defined(biases) || none_defined(biases));
}
Variable stacked(const Variable& x, const std::vector<Variable>& weights,
                 const std::vector<Variable>& biases) {
  return autograd::stacked_linear(x, weights,
                                  all_defined(biases) ? biases : std::vector<Variable>{});
}

// x [B·T, E] (the rows of a padded [B, T] batch) -> the projections by weights {W_i} (and
// biases {b_i}) as heads [B, H, T, Dh], split, transposed and copied (split_heads).
std::vector<Variable> project_heads(const Variable& x, int64_t batch, int64_t length,
                                    const std::vector<Variable>& weights,
                                    const std::vector<Variable>& biases, int64_t heads) {
  if (stacks(weights, biases))
    return split_heads(stacked(x, weights, biases), batch, length, int64_t(weights.size()), heads);
  std::vector<Variable> out;
  for (size_t i = 0; i < weights.size(); ++i)
    out.push_back(
        split_heads(autograd::linear(x, weights[i], biases[i]), batch, length, 1, heads)[0]);
  return out;
}

// One projection's place in packed rows: the Variable holding it and its first column.
struct RowsPart {
  Variable rows;
  int64_t column = 0;
};

// x [N, E] -> the projections by weights {W_i} (and biases) as packed rows, left where
// the GEMM writes them: part i at columns [i·E, (i+1)·E) of one [N, n·E] product when the
// weights stack, else in its own [N, E].
std::vector<RowsPart> project_rows(const Variable& x, const std::vector<Variable>& weights,
                                   const std::vector<Variable>& biases) {
  std::vector<RowsPart> out;
  if (stacks(weights, biases)) {
    const Variable y = stacked(x, weights, biases);
    const int64_t e = weights[0].value().dim(0);
    for (size_t i = 0; i < weights.size(); ++i) out.push_back({y, int64_t(i) * e});
    return out;
  }
  for (size_t i = 0; i < weights.size(); ++i)
    out.push_back({autograd::linear(x, weights[i], biases[i]), 0});
  return out;
}

// Packed query rows attending to packed key rows -> [Nq, E] after W_o (wo, bo).
Variable attend_rows(const RowsPart& q, const RowsPart& k, const RowsPart& v,
                     const PackedBatch& query_rows, const PackedBatch& key_rows, bool causal,
                     int64_t heads, const Variable& wo, const Variable& bo) {
  const int64_t dh = wo.value().dim(0) / heads;
  const ops::FlashRows rows{.heads = heads,
                            .head_dim = dh,
                            .query_lengths = query_rows.lengths,
                            .key_lengths = key_rows.lengths,
                            .q_column = q.column,
                            .k_column = k.column,
                            .v_column = v.column};
  ops::FlashAttentionOptions o;
  o.scale = 1.0 / std::sqrt(double(dh));  // as attend()'s ScaledDot
  o.causal = causal;
  return autograd::linear(autograd::scaled_dot_attention_rows(q.rows, k.rows, v.rows, rows, o), wo,
                          bo);
}

// x [B, T, E] -> its rows [B·T, E], for project_heads.
Variable rows_of(const Variable& x) {
  const Shape& s = x.value().shape();
  return autograd::reshape(x, {s[0] * s[1], s[2]});
}

// heads [B, H, T, Dh] with H and Dh as the layer's, else ShapeError naming them.
void check_heads(const char* name, const Variable& x, int64_t heads, const Tensor& wq) {
  QKV_CHECK(x.defined(), ValueError, "MultiHeadAttention: ", name, " is undefined");
  const Tensor& t = x.value();
  QKV_CHECK(t.rank() == 4 && t.dim(1) == heads && t.dim(3) == wq.dim(0) / heads && t.numel() > 0,
            ShapeError, "MultiHeadAttention: ", name, " ", describe(t),
            " is not non-empty heads [B, H = ", heads, ", T, Dh = ", wq.dim(0) / heads, "]");
  QKV_CHECK(t.dtype() == wq.dtype(), ValueError, "MultiHeadAttention: ", name, " ", describe(t),
            " has another dtype than the parameters (", dtype_name(wq.dtype()), ")");
}

// With key_rows, keys and values may hold another number of rows than the queries
// (flash_attention checks the rows named).
void check_heads_agree(const Tensor& q, const Tensor& k, const Tensor& v, bool key_rows) {
  QKV_CHECK((key_rows || q.dim(0) == k.dim(0)) && k.dim(0) == v.dim(0) && k.dim(2) == v.dim(2),
            ShapeError,
            "MultiHeadAttention: expected queries [B, H, Tq, Dh], keys and values [B, H, Tk, Dh], "
            "got ",
            describe(q), ", ", describe(k), ", ", describe(v));
}

// [B, H, T, Dh] -> [B·H, T, Dh]: head h of batch row b becomes row b·H + h.
Variable fold_heads(const Variable& x) {
  const Shape& s = x.value().shape();
  return autograd::reshape(x, {s[0] * s[1], s[2], s[3]});
}

// ctx [B·H, Tq, Dh] -> concat over heads [B·Tq, E].
Variable merge_heads(const Variable& ctx, int64_t batch, int64_t heads) {
  const int64_t tq = ctx.value().dim(1), dh = ctx.value().dim(2);
  const Variable bhtd = autograd::reshape(ctx, {batch, heads, tq, dh});
  return autograd::reshape(autograd::transpose(bhtd, 1, 2), {batch * tq, heads * dh});
}

// weights [B·H, Tq, Tk] -> [B, H, Tq, Tk] (PerHead) or their mean over H [B, Tq, Tk].
Variable head_weights(const Variable& w, int64_t batch, int64_t heads, HeadWeights mode) {
  const int64_t tq = w.value().dim(1), tk = w.value().dim(2);
  const Variable per_head = autograd::reshape(w, {batch, heads, tq, tk});
  if (mode == HeadWeights::PerHead) return per_head;
  // [B, H, Tq, Tk] -> [B, Tq, Tk, H], then (1/H) Σ_h.
  const Variable last = autograd::transpose(autograd::transpose(per_head, 1, 2), 2, 3);
  return autograd::scale(autograd::sum_last(last), 1.0 / double(heads));
}

// The mask of the [B·H, ...] heads, validated once at [B, Tq, Tk]. When attend() will
// take the fused path (prefix masks only), key_lengths [B] are repeated per head
// (row b·H + h) and causal kept: no [B, Tq, Tk] bias is built. Otherwise one bias,
// repeated per head.
MaskSpec head_mask(const MaskSpec& mask, const detail::ScoreDims& dims, int64_t heads,
                   const MultiHeadOptions& options, DType dtype) {
  MaskSpec per_head;
  if (options.fused && detail::prefix_mask(mask)) {
    if (!mask.key_lengths.empty()) detail::check_key_lengths(mask.key_lengths, dims);
    for (int64_t length : mask.key_lengths)
      per_head.key_lengths.insert(per_head.key_lengths.end(), size_t(heads), length);
    per_head.causal = mask.causal;
    return per_head;
  }
  const Tensor bias = detail::mask_bias(mask, dims, dtype);
  if (bias.defined()) per_head.bias = detail::repeat_per_head(bias, heads);
  return per_head;
}

// Decoding: no gradient to record, no weights asked for, a mask the fused kernel takes.
bool inference_without_weights(const Variable& q, const Variable& k, const Variable& v,
                               const MaskSpec& mask, const MultiHeadOptions& options) {
  const bool records = autograd::grad_mode_enabled() &&
                       (q.requires_grad() || k.requires_grad() || v.requires_grad());
  return !records && !options.need_weights && options.fused && detail::prefix_mask(mask);
}

// The fused kernel on the heads [B, H, T, Dh] as they are -> context [B·H, Tq, Dh]: the
// same kernel call as attend()'s fused path on the folded heads (so the same bits), but
// keys and values whose rows are dense per head are read in place — a decoder's cache
// with spare capacity along T (a slice) would otherwise be copied by the fold every step.
Variable attend_in_place(const Variable& queries, const Variable& keys, const Variable& values,
                         const MaskSpec& mask, std::span<const int64_t> key_rows) {
  const Tensor& q = queries.value();
  ops::FlashAttentionOptions o;
  o.key_rows = key_rows;
  o.scale = 1.0 / std::sqrt(double(keys.value().dim(3)));  // as attend()'s ScaledDot
  o.causal = mask.causal;
  o.key_lengths = mask.key_lengths;
  const ops::FlashAttentionResult r = ops::flash_attention(q, keys.value(), values.value(), o);
  return Variable(r.out.reshape({q.dim(0) * q.dim(1), q.dim(2), r.out.dim(3)}));
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t embed_dim, int64_t heads, Rng& rng) : heads_(heads) {
  check_config(embed_dim, heads);
  params_.wq = xavier_uniform(embed_dim, embed_dim, rng);
  params_.wk = xavier_uniform(embed_dim, embed_dim, rng);
  params_.wv = xavier_uniform(embed_dim, embed_dim, rng);
  params_.wo = xavier_uniform(embed_dim, embed_dim, rng);
  for (Variable* b : {&params_.bq, &params_.bk, &params_.bv, &params_.bo})
    *b = Variable(Tensor::zeros({embed_dim}, DType::F32), true);
}

MultiHeadAttention::MultiHeadAttention(MultiHeadParams params, int64_t heads)
    : params_(std::move(params)), heads_(heads) {
  QKV_CHECK(params_.wq.defined(), ConfigError, "MultiHeadAttention: params.wq is undefined");
  QKV_CHECK(params_.wq.value().rank() == 2, ShapeError, "MultiHeadAttention: params.wq ",
            describe(params_.wq.value()), " is not [E, E]");
  const int64_t e = params_.wq.value().dim(0);
  check_config(e, heads);
  const DType dtype = params_.wq.value().dtype();
  const MultiHeadParams& p = params_;
  for (auto [name, w] : {std::pair{"wq", &p.wq}, {"wk", &p.wk}, {"wv", &p.wv}, {"wo", &p.wo}})
    check_param(name, *w, {e, e}, dtype, false);
  for (auto [name, b] : {std::pair{"bq", &p.bq}, {"bk", &p.bk}, {"bv", &p.bv}, {"bo", &p.bo}})
    check_param(name, *b, {e}, dtype, true);
}

PackedBatch PackedBatch::of(std::span<const int64_t> lengths, int64_t length) {
  PackedBatch p{.batch = int64_t(lengths.size()), .length = length, .rows = {}};
  for (size_t b = 0; b < lengths.size(); ++b) {
    QKV_CHECK(lengths[b] >= 1 && lengths[b] <= length, ValueError, "PackedBatch: lengths[", b,
              "] = ", lengths[b], " is outside [1, T = ", length, "]");
    for (int64_t t = 0; t < lengths[b]; ++t) p.rows.push_back(int64_t(b) * length + t);
    p.lengths.push_back(lengths[b]);
  }
  return p;
}

Variable MultiHeadAttention::project_queries(const Variable& x) const {
  check_input("query", x, params_.wq.value());
  return project_heads(rows_of(x), x.value().dim(0), x.value().dim(1), {params_.wq}, {params_.bq},
                       heads_)[0];
}

Variable MultiHeadAttention::project_keys(const Variable& x) const {
  check_input("key", x, params_.wq.value());
  return project_heads(rows_of(x), x.value().dim(0), x.value().dim(1), {params_.wk}, {params_.bk},
                       heads_)[0];
}

Variable MultiHeadAttention::project_values(const Variable& x) const {
  check_input("value", x, params_.wq.value());
  return project_heads(rows_of(x), x.value().dim(0), x.value().dim(1), {params_.wv}, {params_.bv},
                       heads_)[0];
}

// One GEMM for Q, K and V (issue 13): [B*T, E] x [E, 3E] instead of three [E, E]
// products; in backward one GEMM for dx and one for the stacked dW.
QueryKeyValueHeads MultiHeadAttention::project_self(const Variable& x) const {
  check_input("query", x, params_.wq.value());
  const MultiHeadParams& p = params_;
  const std::vector<Variable> h = project_heads(rows_of(x), x.value().dim(0), x.value().dim(1),
                                                {p.wq, p.wk, p.wv}, {p.bq, p.bk, p.bv}, heads_);
  return {h[0], h[1], h[2]};
}

// Keys and values of one memory as one GEMM, as project_self.
KeyValueHeads MultiHeadAttention::project_key_values(const Variable& memory) const {
  check_input("key", memory, params_.wq.value());
  const MultiHeadParams& p = params_;
  const std::vector<Variable> h =
      project_heads(rows_of(memory), memory.value().dim(0), memory.value().dim(1), {p.wk, p.wv},
                    {p.bk, p.bv}, heads_);
  return {h[0], h[1]};
}

MultiHeadAttention::Context MultiHeadAttention::attend_context(
    const Variable& queries, const Variable& keys, const Variable& values, const MaskSpec& mask,
    const MultiHeadOptions& options) const {
  const Tensor& wq = params_.wq.value();
  check_heads("queries", queries, heads_, wq);
  check_heads("keys", keys, heads_, wq);
  check_heads("values", values, heads_, wq);
  check_heads_agree(queries.value(), keys.value(), values.value(), !options.key_rows.empty());
  const int64_t batch = queries.value().dim(0);
  const detail::ScoreDims dims{batch, queries.value().dim(2), keys.value().dim(2)};
  const MaskSpec per_head = head_mask(mask, dims, heads_, options, wq.dtype());

  AttentionOutput heads;
  if (inference_without_weights(queries, keys, values, mask, options)) {
    heads.context = attend_in_place(queries, keys, values, mask, options.key_rows);
  } else {
    QKV_CHECK(options.key_rows.empty(), ValueError,
              "MultiHeadAttention::attend_heads: key_rows is for inference without weights "
              "(no gradients, need_weights false, a length/causal mask); gather the key rows "
              "instead");
    heads = attend(fold_heads(queries), fold_heads(keys), fold_heads(values), per_head, {},
                   {.kind = ScoreKind::ScaledDot,  // scale 1/sqrt(Dh)
                    .need_weights = options.need_weights,
                    .weight_rows = options.weight_rows,
                    .weights_need_grad = options.weights_need_grad,
                    .fused = options.fused});
  }
  Context c;
  c.heads = heads.context;  // [B·H, Tq, Dh]
  if (options.need_weights)
    c.weights = head_weights(heads.weights, batch, heads_, options.head_weights);
  return c;
}

MultiHeadOutput MultiHeadAttention::attend_heads(const Variable& queries, const Variable& keys,
                                                 const Variable& values, const MaskSpec& mask,
                                                 const MultiHeadOptions& options) const {
  Context c = attend_context(queries, keys, values, mask, options);
  const Shape& q = queries.value().shape();
  const Variable merged = merge_heads(c.heads, q[0], heads_);  // [B·Tq, E]
  MultiHeadOutput out;
  out.output = autograd::reshape(autograd::linear(merged, params_.wo, params_.bo),
                                 {q[0], q[2], embed_dim()});
  out.weights = std::move(c.weights);
  return out;
}

Variable MultiHeadAttention::self_attend(const Variable& x, const PackedBatch& rows,
                                         bool causal) const {
  check_packed("query", x, rows, params_.wq.value());
  const MultiHeadParams& p = params_;
  const std::vector<RowsPart> qkv = project_rows(x, {p.wq, p.wk, p.wv}, {p.bq, p.bk, p.bv});
  return attend_rows(qkv[0], qkv[1], qkv[2], rows, rows, causal, heads_, p.wo, p.bo);
}

Variable MultiHeadAttention::cross_attend(const Variable& x, const PackedBatch& rows,
                                          const Variable& memory,
                                          const PackedBatch& memory_rows) const {
  check_packed("query", x, rows, params_.wq.value());
  check_packed("memory", memory, memory_rows, params_.wq.value());
  QKV_CHECK(rows.batch == memory_rows.batch, ShapeError,
            "MultiHeadAttention::cross_attend: ", rows.batch, " query sequences against ",
            memory_rows.batch, " memory sequences");
  const MultiHeadParams& p = params_;
  // Memory's keys and values before the queries: the order the tape recorded them in
  // before this layer used attention::MultiHeadAttention (bitwise-equal training).
  const std::vector<RowsPart> kv = project_rows(memory, {p.wk, p.wv}, {p.bk, p.bv});
  const std::vector<RowsPart> q = project_rows(x, {p.wq}, {p.bq});
  return attend_rows(q[0], kv[0], kv[1], rows, memory_rows, false, heads_, p.wo, p.bo);
}

MultiHeadOutput MultiHeadAttention::forward(const Variable& query, const Variable& key,
                                            const Variable& value, const MaskSpec& mask,
                                            const MultiHeadOptions& options) const {
  check_input("query", query, params_.wq.value());
  check_input("key", key, params_.wq.value());
  check_input("value", value, params_.wq.value());
  const Tensor &q = query.value(), &k = key.value(), &v = value.value();
  QKV_CHECK(q.dim(0) == k.dim(0) && k.dim(0) == v.dim(0) && k.dim(1) == v.dim(1), ShapeError,
            "MultiHeadAttention: expected query [B, Tq, E], key and value [B, Tk, E], got ",
            describe(q), ", ", describe(k), ", ", describe(v));
  // One input for several roles: the stacked GEMM of the steps a decoder calls, so that
  // forward stays bitwise those steps.
  if (query.same_as(key) && key.same_as(value)) {
    const QueryKeyValueHeads h = project_self(query);
    return attend_heads(h.queries, h.keys, h.values, mask, options);
  }
  if (key.same_as(value)) {
    const KeyValueHeads kv = project_key_values(key);
    return attend_heads(project_queries(query), kv.keys, kv.values, mask, options);
  }
  const Variable v_heads = project_values(value), k_heads = project_keys(key);
  return attend_heads(project_queries(query), k_heads, v_heads, mask, options);
}

}  // namespace qkv::attention
