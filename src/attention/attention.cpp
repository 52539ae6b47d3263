// attend(): validate, score, mask, normalise, weighted sum.
#include "qkv/attention/attention.h"

#include <cmath>
#include <string_view>

#include "detail/mask.h"
#include "detail/scores.h"
#include "qkv/autograd/functions.h"

namespace qkv::attention {
namespace {

using autograd::Variable;

// ValueError when undefined, ShapeError unless rank 3 with no zero dim.
void check_sequence(std::string_view name, const Variable& x) {
  QKV_CHECK(x.defined(), ValueError, "attend: ", name, " is undefined");
  const Tensor& t = x.value();
  QKV_CHECK(t.rank() == 3, ShapeError, "attend: ", name, " ", describe(t), " is not [B, T, D]");
  QKV_CHECK(t.numel() > 0, ShapeError, "attend: ", name, " ", describe(t), " is empty");
}

// ConfigError when the kind needs `p` and it is undefined; ShapeError unless it has
// `expected` shape; ValueError unless it has the inputs' dtype.
void check_param(std::string_view name, const Variable& p, const Shape& expected, DType dtype,
                 std::string_view kind) {
  QKV_CHECK(p.defined(), ConfigError, "attend: ", kind, " scores need params.", name, " ",
            expected);
  QKV_CHECK(p.value().shape() == expected, ShapeError, "attend: params.", name, " ",
            describe(p.value()), " should be ", expected);
  QKV_CHECK(p.value().dtype() == dtype, ValueError, "attend: params.", name, " ",
            describe(p.value()), " has another dtype than q (", dtype_name(dtype), ")");
}

void check_additive(const ScoreParams& p, int64_t dq, int64_t dk, DType dtype) {
  QKV_CHECK(p.w.defined(), ConfigError, "attend: additive scores need params.w [Dq, A]");
  const Tensor& w = p.w.value();
  QKV_CHECK(w.rank() == 2 && w.dim(0) == dq && w.dim(1) > 0, ShapeError, "attend: params.w ",
            describe(w), " should be [Dq, A] with Dq = ", dq);
  const int64_t hidden = w.dim(1);
  check_param("w", p.w, {dq, hidden}, dtype, "additive");
  check_param("u", p.u, {dk, hidden}, dtype, "additive");
  check_param("v", p.v, {hidden}, dtype, "additive");
  if (p.b.defined()) check_param("b", p.b, {hidden}, dtype, "additive");
}

void check_score(const Tensor& q, const Tensor& k, const ScoreParams& p,
                 const AttentionOptions& o) {
  const int64_t dq = q.dim(2), dk = k.dim(2);
  switch (o.kind) {
    case ScoreKind::General:
      check_param("w", p.w, {dq, dk}, q.dtype(), "general");
      return;
    case ScoreKind::Additive:
      check_additive(p, dq, dk, q.dtype());
      return;
    case ScoreKind::ScaledDot:
      QKV_CHECK(std::isfinite(o.scale), ConfigError, "attend: scale ", o.scale, " is not finite");
      break;
    case ScoreKind::Cosine:
      QKV_CHECK(std::isfinite(o.temperature) && o.temperature > 0, ConfigError,
                "attend: temperature ", o.temperature, " must be finite and > 0");
      break;
    case ScoreKind::Dot:
      break;
  }
  QKV_CHECK(dq == dk, ShapeError, "attend: dot-product scores need Dq == Dk, got q ", describe(q),
            " and k ", describe(k));
}

// Checks q, k, v against each other and the score's needs; returns B, Tq, Tk.
detail::ScoreDims validate(const Variable& q, const Variable& k, const Variable& v,
                           const ScoreParams& params, const AttentionOptions& options) {
  check_sequence("q", q);
  check_sequence("k", k);
  check_sequence("v", v);
  const Tensor &tq = q.value(), &tk = k.value(), &tv = v.value();
  QKV_CHECK(tq.dtype() == tk.dtype() && tq.dtype() == tv.dtype(), ValueError,
            "attend: mixed dtypes q ", describe(tq), ", k ", describe(tk), ", v ", describe(tv));
  QKV_CHECK(tq.dim(0) == tk.dim(0) && tk.dim(0) == tv.dim(0) && tk.dim(1) == tv.dim(1), ShapeError,
            "attend: expected q [B, Tq, Dq], k [B, Tk, Dk], v [B, Tk, Dv], got q ", describe(tq),
            ", k ", describe(tk), ", v ", describe(tv));
  check_score(tq, tk, params, options);
  return {tq.dim(0), tq.dim(1), tk.dim(1)};
}

// The fused kernel computes exactly the composed function for these (see
// AttentionOptions::fused).
bool use_fused(const MaskSpec& mask, const AttentionOptions& o) {
  const bool dot_kind =
      o.kind == ScoreKind::Dot || o.kind == ScoreKind::ScaledDot || o.kind == ScoreKind::Cosine;
  return o.fused && dot_kind && detail::prefix_mask(mask);
}

// The fused kernel's inputs for the dot kinds: q̃, k̃ are q, k (dot, scaled dot) or
// their l2-normalised rows (cosine), and the scale applied to q̃ k̃ᵀ.
struct FusedInputs {
  Variable q, k;
  ops::FlashAttentionOptions options;
};

FusedInputs fused_inputs(const Variable& q, const Variable& k, const MaskSpec& mask,
                         const AttentionOptions& o) {
  FusedInputs in{q, k, {1.0, mask.causal, mask.key_lengths}};
  if (o.kind == ScoreKind::ScaledDot)
    in.options.scale = o.scale != 0.0 ? o.scale : 1.0 / std::sqrt(double(k.value().dim(2)));
  if (o.kind == ScoreKind::Cosine) {
    in.q = autograd::l2_normalize(q);
    in.k = autograd::l2_normalize(k);
    in.options.scale = 1.0 / o.temperature;
  }
  return in;
}

// weights [B, Tq, Tk] -> the rows asked for, [B, rows, Tk]. A strict subset is a
// constant copy (check_rows refuses subsets of differentiable weights).
Variable select_rows(const Variable& weights, ops::RowRange rows) {
  const int64_t tq = weights.value().dim(1);
  const int64_t end = rows.end < 0 ? tq : rows.end;
  if (rows.begin == 0 && end == tq) return weights;
  return Variable(weights.value().slice(1, rows.begin, end).contiguous());
}

void check_rows(const AttentionOptions& o, int64_t tq) {
  const ops::RowRange rows = o.weight_rows;
  const int64_t end = rows.end < 0 ? tq : rows.end;
  QKV_CHECK(rows.begin >= 0 && rows.begin <= end && end <= tq, ConfigError, "attend: weight_rows [",
            rows.begin, ", ", rows.end, ") outside the ", tq, " query rows");
  QKV_CHECK(!o.weights_need_grad || (rows.begin == 0 && end == tq), ConfigError,
            "attend: weight_rows selects a subset of the rows but weights_need_grad is set; "
            "differentiable weights come whole (ask for all rows)");
}

}  // namespace

AttentionOutput attend(const Variable& q, const Variable& k, const Variable& v,
                       const MaskSpec& mask, const ScoreParams& params,
                       const AttentionOptions& options) {
  const detail::ScoreDims dims = validate(q, k, v, params, options);
  if (options.need_weights) check_rows(options, dims.queries);
  AttentionOutput out;
  if (use_fused(mask, options)) {
    if (!mask.key_lengths.empty()) detail::check_key_lengths(mask.key_lengths, dims);
    // context = softmax(scale · q̃ k̃ᵀ, masked) v in one fused op: memory O(T).
    const FusedInputs in = fused_inputs(q, k, mask, options);
    Tensor lse;
    out.context = autograd::scaled_dot_attention(in.q, in.k, v, in.options, &lse);
    if (!options.need_weights) return out;
    if (!options.weights_need_grad) {  // inspection: only the rows asked for, from lse
      out.weights = Variable(ops::flash_attention_weights(in.q.value(), in.k.value(), lse,
                                                          in.options, options.weight_rows));
      return out;
    }
  }
  // One additive bias [B, Tq, Tk] (0 visible, −inf masked) carries every mask; the softmax
  // kernel gives a fully masked row zero weights and a zero gradient.
  const Tensor bias = detail::mask_bias(mask, dims, q.value().dtype());
  ops::SoftmaxMask softmax_mask;
  if (bias.defined()) softmax_mask.bias = bias.view();
  const Variable weights = autograd::softmax(detail::score(q, k, params, options), softmax_mask);
  // context [B, Tq, Dv] = weights [B, Tq, Tk] · v [B, Tk, Dv], unless the fused kernel
  // gave it above (then it is the same with or without weights).
  if (!out.context.defined()) out.context = autograd::matmul(weights, v);
  if (options.need_weights) out.weights = select_rows(weights, options.weight_rows);
  return out;
}

}  // namespace qkv::attention
