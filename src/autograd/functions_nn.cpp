// Differentiable activations, softmax, layer norm, embedding, cross-entropy, dropout and
// fused scaled-dot attention.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "detail/record.h"
#include "qkv/autograd/functions.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/embedding.h"
#include "qkv/ops/layer_norm.h"
#include "qkv/ops/linear_cross_entropy.h"

namespace qkv::autograd {
namespace {

const OpRegistration kTanh("tanh");
const OpRegistration kSigmoid("sigmoid");
const OpRegistration kRelu("relu");
const OpRegistration kGelu("gelu");
const OpRegistration kSoftmax("softmax");
const OpRegistration kLogSoftmax("log_softmax");
const OpRegistration kL2Normalize("l2_normalize");
const OpRegistration kLayerNorm("layer_norm");
const OpRegistration kEmbedding("embedding");
const OpRegistration kCrossEntropy("cross_entropy");
const OpRegistration kLinearCrossEntropy("linear_cross_entropy");
const OpRegistration kDropout("dropout");
const OpRegistration kDropoutAdd("dropout_add");
const OpRegistration kScaledDotAttention("scaled_dot_attention");
const OpRegistration kScaledDotAttentionRows("scaled_dot_attention_rows");
const OpRegistration kAdditiveScores("additive_scores");

// The fused attention's forward options: training keeps the probabilities for backward
// within a per-call budget (see ops::kFlashKeepProbsBytes); inference and calls already
// given a budget do not change.
ops::FlashAttentionOptions forward_options(const Variable& q, const Variable& k, const Variable& v,
                                           const ops::FlashAttentionOptions& options) {
  ops::FlashAttentionOptions o = options;
  const bool backward_will_run =
      grad_mode_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  if (backward_will_run && o.keep_probs_up_to_bytes == 0)
    o.keep_probs_up_to_bytes = ops::kFlashKeepProbsBytes;
  return o;
}

Variable activation(const OpRegistration& op, ops::Activation f, const Variable& x) {
  Tensor y = ops::activation(f, x.value());
  // Saves y as well as x: tanh' and sigmoid' are cheapest from the output.
  return detail::record(op, y, {x}, [x, y, f](const Tensor& dy) {
    detail::accumulate(x, ops::activation_backward(f, dy, x.value(), y));
  });
}

}  // namespace

namespace detail {
void link_nn_functions() {}
}  // namespace detail

using detail::accumulate;

Variable tanh(const Variable& x) {
  return activation(kTanh, ops::Activation::Tanh, x);
}
Variable sigmoid(const Variable& x) {
  return activation(kSigmoid, ops::Activation::Sigmoid, x);
}
Variable relu(const Variable& x) {
  return activation(kRelu, ops::Activation::Relu, x);
}
Variable gelu(const Variable& x) {
  return activation(kGelu, ops::Activation::Gelu, x);
}

Variable softmax(const Variable& x, const ops::SoftmaxMask& mask) {
  Tensor y = ops::softmax(x.value(), mask);
  // Backward needs only y: masked positions have y = 0 and so get no gradient.
  return detail::record(kSoftmax, y, {x},
                        [x, y](const Tensor& dy) { accumulate(x, ops::softmax_backward(dy, y)); });
}

Variable log_softmax(const Variable& x, const ops::SoftmaxMask& mask) {
  Tensor y = ops::log_softmax(x.value(), mask);
  return detail::record(kLogSoftmax, y, {x}, [x, y](const Tensor& dy) {
    accumulate(x, ops::log_softmax_backward(dy, y));
  });
}

Variable l2_normalize(const Variable& x, double eps) {
  return detail::record(kL2Normalize, ops::l2_normalize(x.value(), eps), {x},
                        [x, eps](const Tensor& dy) {
                          accumulate(x, ops::l2_normalize_backward(dy, x.value(), eps));
                        });
}

Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta, double eps) {
  ops::LayerNormResult r = ops::layer_norm(x.value(), gamma.value(), beta.value(), eps);
  return detail::record(kLayerNorm, r.y, {x, gamma, beta},
                        [x, gamma, beta, mean = r.mean, rstd = r.rstd](const Tensor& dy) {
                          // dx into x's gradient (added when it has one: a pre-LN layer's
                          // residual stream), not a temporary added afterwards.
                          ops::GradTarget dx = detail::grad_slot(x);
                          ops::LayerNormGradients g = ops::layer_norm_backward_into(
                              dy, x.value(), gamma.value(), mean, rstd, dx);
                          detail::fill(x, std::move(dx));
                          accumulate(gamma, std::move(g.dgamma));
                          accumulate(beta, std::move(g.dbeta));
                        });
}

Variable embedding(const Variable& table, const Tensor& ids) {
  return detail::record(kEmbedding, ops::embedding(table.value(), ids), {table},
                        [table, ids](const Tensor& dy) {
                          accumulate(table, ops::embedding_backward(dy, ids, table.value().dim(0)));
                        });
}

Variable cross_entropy(const Variable& logits, const Tensor& targets,
                       const ops::CrossEntropyOptions& options) {
  ops::CrossEntropyResult r = ops::cross_entropy(logits.value(), targets, options);
  return detail::record(
      kCrossEntropy, r.loss, {logits}, [logits, targets, options, lse = r.lse](const Tensor& dy) {
        accumulate(logits, ops::cross_entropy_backward(dy, logits.value(), targets, lse, options));
      });
}

Variable linear_cross_entropy(const Variable& hidden, const Variable& weight, const Variable& bias,
                              const Tensor& targets, const ops::CrossEntropyOptions& options,
                              int64_t chunk_rows) {
  std::vector<Variable> inputs{hidden, weight};
  if (bias.defined()) inputs.push_back(bias);
  const bool wanted =
      grad_mode_enabled() && std::any_of(inputs.begin(), inputs.end(),
                                         [](const Variable& v) { return v.requires_grad(); });
  const TensorView b = bias.defined() ? TensorView(bias.value()) : TensorView();
  ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(
      hidden.value(), weight.value(), bias.defined() ? &b : nullptr, targets,
      {.loss = options, .want_gradients = wanted, .chunk_rows = chunk_rows});
  // The gradients were formed in the forward pass for d(loss) = 1 (see
  // ops/linear_cross_entropy.h); the loss is linear in dy, so backward scales them,
  // and with the usual dy = 1 passes them on as they are.
  auto g = std::make_shared<ops::LinearCrossEntropyResult>(std::move(r));
  return detail::record(
      kLinearCrossEntropy, g->loss, inputs, [hidden, weight, bias, g](const Tensor& dy) {
        const double s = dy.to(DType::F64).data<double>()[0];
        auto scaled = [s](const Tensor& t) { return s == 1.0 ? t : ops::scale(t, s); };
        accumulate(hidden, scaled(g->dhidden));
        accumulate(weight, scaled(g->dweight));
        if (bias.defined()) accumulate(bias, scaled(g->dbias));
      });
}

Variable dropout(const Variable& x, const ops::DropoutOptions& options) {
  // The backward reads the mask forward drew (a bit per element) instead of drawing it
  // again: dropout was ~2.3 % of a Transformer update at 1 thread, half of it the redraw.
  if (!grad_mode_enabled() || !x.requires_grad())  // no backward: nothing to record
    return detail::record(
        kDropout, ops::dropout(x.value(), options), {x},
        [x, options](const Tensor& dy) { accumulate(x, ops::dropout_backward(dy, options)); });
  auto mask = std::make_shared<ops::DropoutMask>();
  Tensor y = ops::dropout(x.value(), options, *mask);
  return detail::record(kDropout, std::move(y), {x}, [x, mask](const Tensor& dy) {
    accumulate(x, ops::dropout_backward_recorded(dy, *mask));
  });
}

Variable dropout_add(const Variable& residual, const Variable& x,
                     const ops::DropoutOptions& options) {
  if (!grad_mode_enabled() || !(residual.requires_grad() || x.requires_grad()))
    return add(residual, dropout(x, options));
  auto mask = std::make_shared<ops::DropoutMask>();
  Tensor y = ops::dropout_add(residual.value(), x.value(), options, *mask);
  return detail::record(kDropoutAdd, std::move(y), {residual, x}, [residual, x, mask](Tensor&& dy) {
    accumulate(x, ops::dropout_backward_recorded(dy, *mask));
    accumulate(residual, std::move(dy));
  });
}

Variable scaled_dot_attention(const Variable& q, const Variable& k, const Variable& v,
                              const ops::FlashAttentionOptions& options, Tensor* lse) {
  ops::FlashAttentionResult r =
      ops::flash_attention(q.value(), k.value(), v.value(), forward_options(q, k, v, options));
  if (lse) *lse = r.lse;
  // The backward outlives the caller's key_lengths span: keep a copy.
  auto lengths = std::make_shared<const std::vector<int64_t>>(options.key_lengths.begin(),
                                                              options.key_lengths.end());
  ops::FlashAttentionOptions saved = options;
  saved.key_lengths = *lengths;
  return detail::record(
      kScaledDotAttention, r.out, {q, k, v},
      [q, k, v, out = r.out, l = r.lse, p = r.probs, saved, lengths](const Tensor& dy) {
        ops::FlashAttentionGradients g =
            ops::flash_attention_backward(dy, q.value(), k.value(), v.value(), out, l, saved,
                                          p.defined() ? p.view() : TensorView());
        accumulate(q, std::move(g.dq));
        accumulate(k, std::move(g.dk));
        accumulate(v, std::move(g.dv));
      });
}

Variable scaled_dot_attention_rows(const Variable& q, const Variable& k, const Variable& v,
                                   const ops::FlashRows& rows,
                                   const ops::FlashAttentionOptions& options) {
  ops::FlashAttentionResult r = ops::flash_attention_rows(q.value(), k.value(), v.value(), rows,
                                                          forward_options(q, k, v, options));
  // The backward outlives the caller's length spans: keep copies.
  auto lengths = std::make_shared<const std::pair<std::vector<int64_t>, std::vector<int64_t>>>(
      std::vector<int64_t>(rows.query_lengths.begin(), rows.query_lengths.end()),
      std::vector<int64_t>(rows.key_lengths.begin(), rows.key_lengths.end()));
  // The distinct inputs (q, k and v are often one [N, 3E] projection): each gets one
  // gradient, into which the kernel writes every role's columns.
  std::vector<Variable> inputs{q};
  for (const Variable* x : {&k, &v})
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const Variable& i) { return i.same_as(*x); }))
      inputs.push_back(*x);
  return detail::record(
      kScaledDotAttentionRows, r.out, inputs,
      [q, k, v, inputs, rows, options, lengths, out = r.out, l = r.lse,
       p = r.probs](const Tensor& dy) {
        ops::FlashRows saved = rows;
        saved.query_lengths = lengths->first;
        saved.key_lengths = lengths->second;
        const std::pair<const Variable*, int64_t> roles[] = {
            {&q, rows.q_column}, {&k, rows.k_column}, {&v, rows.v_column}};
        const int64_t width = rows.heads * rows.head_dim;
        // One gradient per distinct input: uninitialised when its roles' head columns
        // cover all its columns (the kernel writes each of them), else zeros around them.
        std::vector<Tensor> grads;
        for (const Variable& x : inputs) {
          std::vector<bool> covered(size_t(x.value().dim(1)), false);
          for (const auto& [role, column] : roles)
            if (role->same_as(x)) std::fill_n(covered.begin() + column, width, true);
          const bool whole = std::ranges::all_of(covered, [](bool b) { return b; });
          grads.push_back(whole ? Tensor::empty(x.value().shape(), x.value().dtype())
                                : Tensor::zeros(x.value().shape(), x.value().dtype()));
        }
        auto grad_of = [&](const Variable& role) -> const Tensor& {
          for (size_t i = 0; i < inputs.size(); ++i)
            if (inputs[i].same_as(role)) return grads[i];
          return grads[0];  // unreachable: every role is one of the inputs
        };
        ops::flash_attention_rows_backward(dy, q.value(), k.value(), v.value(), out, l, saved,
                                           options, p.defined() ? p.view() : TensorView(),
                                           grad_of(q), grad_of(k), grad_of(v));
        for (size_t i = 0; i < inputs.size(); ++i) accumulate(inputs[i], std::move(grads[i]));
      });
}

Variable additive_scores(const Variable& qp, const Variable& kp, const Variable& v) {
  return detail::record(kAdditiveScores, ops::additive_scores(qp.value(), kp.value(), v.value()),
                        {qp, kp, v}, [qp, kp, v](const Tensor& dy) {
                          // kp straight into its gradient: a decoder reads the same keys at
                          // every step (no temporary, no extra pass per step).
                          ops::GradTarget dkp = detail::grad_slot(kp);
                          ops::AdditiveScoresGradients g = ops::additive_scores_backward(
                              dy, qp.value(), kp.value(), v.value(), dkp);
                          g.dkp = Tensor();  // shares dkp's storage: drop it so kp adopts
                          detail::fill(kp, std::move(dkp));
                          accumulate(qp, std::move(g.dqp));
                          accumulate(v, std::move(g.dv));
                        });
}

}  // namespace qkv::autograd
