// Score functions (Luong et al. 2015, sec. 3.1; Bahdanau et al. 2015, appendix A;
// Vaswani et al. 2017, eq. 1). Each is a short chain of differentiable functions, so
// gradients come from the ops' backward pairs and this file holds no calculus.
#include "detail/scores.h"

#include <cmath>

#include "qkv/autograd/functions.h"

namespace qkv::attention::detail {
namespace {

using autograd::Variable;

// q [B, Tq, D], k [B, Tk, D] -> q kᵀ [B, Tq, Tk] (batched, k used transposed in place).
Variable dot_scores(const Variable& q, const Variable& k) {
  return autograd::matmul(q, k, {.transpose_a = false, .transpose_b = true});
}

// Bahdanau: e_ij = vᵀ tanh(W q_i + U k_j + b). The projections are two GEMMs over the
// rows; the Tq·Tk·A tanh terms either go through the fused kernel (never stored) or,
// on the composed path (the oracle), are materialised as [B, Tq, Tk, A].
Variable additive_scores(const Variable& q, const Variable& k, const ScoreParams& p, bool fused) {
  if (fused) {
    Variable qp = project_rows(q, p.w);
    if (p.b.defined()) qp = autograd::add_bias(qp, p.b);  // b joins the query side once
    return autograd::additive_scores(qp, project_rows(k, p.u), p.v);
  }
  const int64_t batch = q.value().dim(0), tq = q.value().dim(1), tk = k.value().dim(1);
  const int64_t hidden = p.v.value().dim(0);
  Variable h = autograd::pairwise_add(project_rows(q, p.w), project_rows(k, p.u));
  if (p.b.defined()) h = autograd::add_bias(h, p.b);
  // [B·Tq·Tk, A] x [A, 1] -> [B, Tq, Tk]
  const Variable t = autograd::reshape(autograd::tanh(h), {batch * tq * tk, hidden});
  const Variable e = autograd::matmul(t, autograd::reshape(p.v, {hidden, 1}));
  return autograd::reshape(e, {batch, tq, tk});
}

}  // namespace

Variable project_rows(const Variable& x, const Variable& w) {
  const Shape& s = x.value().shape();
  const Variable flat = autograd::reshape(x, {s[0] * s[1], s[2]});
  return autograd::reshape(autograd::matmul(flat, w), {s[0], s[1], w.value().dim(1)});
}

Variable score(const Variable& q, const Variable& k, const ScoreParams& params,
               const AttentionOptions& options) {
  switch (options.kind) {
    case ScoreKind::Dot:
      return dot_scores(q, k);
    case ScoreKind::ScaledDot: {
      // 1/sqrt(Dk) keeps the logits' variance ~1 for unit-variance q, k (Vaswani, fn. 4).
      const double s =
          options.scale != 0.0 ? options.scale : 1.0 / std::sqrt(double(k.value().dim(2)));
      return autograd::scale(dot_scores(q, k), s);
    }
    case ScoreKind::Cosine: {
      // (q/|q|)·(k/|k|) / τ; zero vectors score 0 (see ops::l2_normalize's eps).
      const Variable s = dot_scores(autograd::l2_normalize(q), autograd::l2_normalize(k));
      return options.temperature == 1.0 ? s : autograd::scale(s, 1.0 / options.temperature);
    }
    case ScoreKind::General:  // qᵀ W k = (q W) kᵀ
      return dot_scores(project_rows(q, params.w), k);
    case ScoreKind::Additive:
      return additive_scores(q, k, params, options.fused);
  }
  QKV_THROW(InternalError, "attend: unknown score kind ", int(options.kind));
}

}  // namespace qkv::attention::detail
