// Differentiable matmul, elementwise arithmetic, reductions and shape ops. Each closure
// captures what the ops backward needs (inputs are shared handles: no copies).
#include <algorithm>
#include <iterator>
#include <utility>

#include "detail/record.h"
#include "qkv/autograd/functions.h"
#include "qkv/autograd/packed_weights.h"
#include "qkv/ops/broadcast.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/matmul.h"
#include "qkv/ops/reduce.h"
#include "qkv/ops/sequence.h"
#include "qkv/ops/shape_ops.h"

namespace qkv::autograd {
namespace {

const OpRegistration kMatmul("matmul");
const OpRegistration kAdd("add");
const OpRegistration kSub("sub");
const OpRegistration kMul("mul");
const OpRegistration kScale("scale");
const OpRegistration kAddBias("add_bias");
const OpRegistration kSum("sum");
const OpRegistration kMean("mean");
const OpRegistration kSumLast("sum_last");
const OpRegistration kPairwiseAdd("pairwise_add");
const OpRegistration kTranspose("transpose");
const OpRegistration kReshape("reshape");
const OpRegistration kStackedLinear("stacked_linear");
const OpRegistration kLinear("linear");
const OpRegistration kFeedForwardRelu("feed_forward_relu");

// rows [begin, begin + count) of a contiguous matrix t [R, C], as a view.
TensorView row_block(const Tensor& t, int64_t begin, int64_t count) {
  const int64_t cols = t.numel() / t.dim(0);
  auto* base = static_cast<char*>(t.view().raw_data());
  return TensorView(base + size_t(begin * cols) * dtype_size(t.dtype()),
                    t.rank() == 1 ? Shape{count} : Shape{count, cols}, t.dtype());
}

// The parts [O_i, ...] stacked along their first axis: in place when they lie back to
// back in memory (contiguous, one dtype, equal trailing dims), else one copy (held in
// `copy`). The view lives as long as the parts' storage (the caller holds the parts).
struct Stacked {
  Tensor copy;
  TensorView view;
};
Stacked stacked(const std::vector<Variable>& parts) {
  const Tensor& first = parts.front().value();
  const int64_t trailing = first.numel() / first.dim(0);
  bool adjacent = true;
  int64_t rows = 0;
  auto* next = static_cast<char*>(first.view().raw_data());
  std::vector<TensorView> views;
  for (const Variable& p : parts) {
    const Tensor& t = p.value();
    auto* data = static_cast<char*>(t.view().raw_data());
    adjacent = adjacent && t.is_contiguous() && t.dtype() == first.dtype() &&
               t.rank() == first.rank() && t.numel() / t.dim(0) == trailing && data == next;
    next = data + size_t(t.numel()) * dtype_size(t.dtype());
    rows += t.dim(0);
    views.push_back(t.view());
  }
  if (!adjacent) {
    Tensor copy = ops::concat(views, 0);  // checks shapes and dtypes, naming them
    const TensorView view = copy.view();
    return {std::move(copy), view};
  }
  return {Tensor(),
          TensorView(first.view().raw_data(), first.shape().with_dim(0, rows), first.dtype())};
}

}  // namespace

namespace detail {
void link_linear_functions() {}
}  // namespace detail

using detail::accumulate;

namespace {
// dy -> the gradients of a and b, written into them directly (detail::grad_slot): a weight
// used at every decoder step, or the attention memory read at every step, gets no
// temporary and no extra pass per use -- in the Bahdanau RNN's update those additions
// were a sixth of backward. Nothing is computed for an operand that needs no gradient.
void matmul_backward_to(const Tensor& dy, const Variable& a, const Variable& b,
                        const ops::MatmulOptions& options) {
  if (a.same_as(b)) {  // x·x: the second product adds to the first
    ops::GradTarget da = detail::grad_slot(a);
    ops::matmul_backward_into(dy, a.value(), b.value(), options, da, {});
    detail::fill(a, std::move(da));
    ops::GradTarget db = detail::grad_slot(b);
    ops::matmul_backward_into(dy, a.value(), b.value(), options, {}, db);
    detail::fill(b, std::move(db));
    return;
  }
  ops::GradTarget da = detail::grad_slot(a), db = detail::grad_slot(b);
  ops::matmul_backward_into(dy, a.value(), b.value(), options, da, db);
  detail::fill(a, std::move(da));
  detail::fill(b, std::move(db));
}
}  // namespace

Variable matmul(const Variable& a, const Variable& b, const ops::MatmulOptions& options) {
  if (options.transpose_b && !options.transpose_a && a.value().rank() == 2 &&
      b.value().rank() == 2) {
    // Inside a PackedWeightsScope with grad mode off: nothing to record.
    const Variable weights[] = {b};
    if (const ops::PackedWeight* w = packed_weight(weights, b.value().view()))
      return Variable(ops::matmul_packed(a.value(), *w));
  }
  return detail::record(
      kMatmul, ops::matmul(a.value(), b.value(), options), {a, b},
      [a, b, options](const Tensor& dy) { matmul_backward_to(dy, a, b, options); });
}

namespace {
// linear's backward for dy into x, w and bias (defined), each as far as it needs one.
void linear_backward_to(const Tensor& dy, const Variable& x, const Variable& w,
                        const Variable& bias) {
  const ops::MatmulOptions wt{.transpose_a = false, .transpose_b = true};
  if (!bias.requires_grad() || !w.requires_grad() || x.same_as(w)) {
    if (bias.requires_grad()) accumulate(bias, ops::bias_gradient(dy));
    matmul_backward_to(dy, x, w, wt);
    return;
  }
  // The bias gradient comes with dW's product (ops::linear_backward_into).
  ops::GradTarget dx = detail::grad_slot(x), dw = detail::grad_slot(w);
  Tensor dbias = ops::linear_backward_into(dy, x.value(), w.value(), dx, dw);
  detail::fill(x, std::move(dx));
  detail::fill(w, std::move(dw));
  accumulate(bias, std::move(dbias));
}
}  // namespace

Variable linear(const Variable& x, const Variable& w, const Variable& bias) {
  const ops::MatmulOptions wt{.transpose_a = false, .transpose_b = true};
  if (!bias.defined()) return matmul(x, w, wt);
  const Variable weights[] = {w};
  // Decoding (a PackedWeightsScope, grad mode off): the packed product, the bias added
  // to each finished sum.
  if (const ops::PackedWeight* packed =
          x.value().rank() == 2 ? packed_weight(weights, w.value().view()) : nullptr) {
    const TensorView b = bias.value().view();
    return Variable(ops::matmul_packed(x.value(), *packed, &b));
  }
  return detail::record(kLinear, ops::linear(x.value(), w.value(), bias.value()), {x, w, bias},
                        [x, w, bias](const Tensor& dy) { linear_backward_to(dy, x, w, bias); });
}

Variable feed_forward_relu(const Variable& x, const Variable& w1, const Variable& b1,
                           const Variable& w2, const Variable& b2) {
  QKV_CHECK(b1.defined() && b2.defined(), ValueError,
            "feed_forward_relu: both layers need a bias (got ", b1.defined() ? "b1" : "no b1", ", ",
            b2.defined() ? "b2" : "no b2", ")");
  const Variable inputs[] = {x, w1, b1, w2, b2};
  const bool backward_will_run =
      grad_mode_enabled() && std::any_of(std::begin(inputs), std::end(inputs),
                                         [](const Variable& v) { return v.requires_grad(); });
  if (!backward_will_run) return linear(relu(linear(x, w1, b1)), w2, b2);
  Tensor h = ops::linear_relu(x.value(), w1.value(), b1.value());
  Tensor y = ops::linear(h, w2.value(), b2.value());
  return detail::record(kFeedForwardRelu, std::move(y), inputs,
                        [x, w1, b1, w2, b2, h = std::move(h)](const Tensor& dy) {
                          // The second layer's weight and bias (its input h is no variable).
                          linear_backward_to(dy, Variable(h), w2, b2);
                          if (!x.requires_grad() && !w1.requires_grad() && !b1.requires_grad())
                            return;
                          const Tensor dpre = ops::linear_backward_through_relu(dy, w2.value(), h);
                          linear_backward_to(dpre, x, w1, b1);
                        });
}

Variable add(const Variable& a, const Variable& b) {
  // y = a + b: both inputs receive dy unchanged.
  return detail::record(kAdd, ops::add(a.value(), b.value()), {a, b}, [a, b](Tensor&& dy) {
    accumulate(a, dy);             // a copy (or a sum)
    accumulate(b, std::move(dy));  // b may adopt dy itself
  });
}

Variable sub(const Variable& a, const Variable& b) {
  return detail::record(kSub, ops::sub(a.value(), b.value()), {a, b}, [a, b](const Tensor& dy) {
    ops::BinaryGrads g = ops::sub_backward(dy);
    accumulate(a, std::move(g.da));
    accumulate(b, std::move(g.db));
  });
}

Variable mul(const Variable& a, const Variable& b) {
  return detail::record(kMul, ops::mul(a.value(), b.value()), {a, b}, [a, b](const Tensor& dy) {
    ops::BinaryGrads g = ops::mul_backward(dy, a.value(), b.value());
    accumulate(a, std::move(g.da));
    accumulate(b, std::move(g.db));
  });
}

Variable scale(const Variable& x, double s) {
  return detail::record(kScale, ops::scale(x.value(), s), {x},
                        [x, s](const Tensor& dy) { accumulate(x, ops::scale_backward(dy, s)); });
}

Variable add_bias(const Variable& x, const Variable& bias) {
  return detail::record(kAddBias, ops::add_bias(x.value(), bias.value()), {x, bias},
                        [x, bias](Tensor&& dy) {
                          // dx = dy: passed on (adopted when x has no gradient yet)
                          // instead of add_bias_backward's copy.
                          accumulate(bias, ops::bias_gradient(dy));
                          accumulate(x, std::move(dy));
                        });
}

Variable sum(const Variable& x) {
  return detail::record(kSum, ops::sum(x.value()), {x}, [x](const Tensor& dy) {
    accumulate(x, ops::sum_backward(dy, x.value().shape()));
  });
}

Variable mean(const Variable& x) {
  return detail::record(kMean, ops::mean(x.value()), {x}, [x](const Tensor& dy) {
    accumulate(x, ops::mean_backward(dy, x.value().shape()));
  });
}

Variable sum_last(const Variable& x) {
  return detail::record(kSumLast, ops::sum_last(x.value()), {x}, [x](const Tensor& dy) {
    accumulate(x, ops::sum_last_backward(dy, x.value().shape()));
  });
}

Variable pairwise_add(const Variable& a, const Variable& c) {
  return detail::record(kPairwiseAdd, ops::pairwise_add(a.value(), c.value()), {a, c},
                        [a, c](const Tensor& dy) {
                          ops::BinaryGrads g = ops::pairwise_add_backward(dy);
                          accumulate(a, std::move(g.da));
                          accumulate(c, std::move(g.db));
                        });
}

Variable transpose(const Variable& x, int axis_a, int axis_b) {
  return detail::record(kTranspose, ops::transpose(x.value(), axis_a, axis_b), {x},
                        [x, axis_a, axis_b](const Tensor& dy) {
                          accumulate(x, ops::transpose_backward(dy, axis_a, axis_b));
                        });
}

Variable reshape(const Variable& x, const Shape& shape) {
  return detail::record(kReshape, ops::reshape(x.value(), shape), {x}, [x](Tensor&& dy) {
    // A view of dy's storage when dy is contiguous; with dy's own handle dropped it is
    // the storage's only owner, and x adopts it instead of copying (every Linear on a
    // [B, T, E] input reshapes twice).
    Tensor g = ops::reshape_backward(dy, x.value().shape());
    dy = Tensor();
    accumulate(x, std::move(g));
  });
}

Variable stacked_linear(const Variable& x, const std::vector<Variable>& weights,
                        const std::vector<Variable>& biases) {
  QKV_CHECK(!weights.empty() && (biases.empty() || biases.size() == weights.size()), ValueError,
            "stacked_linear: ", weights.size(), " weights and ", biases.size(),
            " biases (one per weight, or none)");
  const Stacked w = stacked(weights);
  const ops::MatmulOptions no_a_t_b{.transpose_a = false, .transpose_b = true};
  const ops::PackedWeight* packed =
      x.value().rank() == 2 ? packed_weight(weights, w.view) : nullptr;
  Tensor y;  // x Wᵀ (+ b) [N, Σ O_i]
  if (packed) {
    const Stacked b = biases.empty() ? Stacked{} : stacked(biases);
    y = ops::matmul_packed(x.value(), *packed, biases.empty() ? nullptr : &b.view);
  } else {
    y = biases.empty() ? ops::matmul(x.value(), w.view, no_a_t_b)
                       : ops::linear(x.value(), w.view, stacked(biases).view);
  }
  std::vector<Variable> inputs{x};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  inputs.insert(inputs.end(), biases.begin(), biases.end());
  return detail::record(
      kStackedLinear, std::move(y), inputs, [x, weights, biases, no_a_t_b](const Tensor& dy) {
        // Stacked again: a copy made in forward is not kept alive.
        const Stacked again = stacked(weights);
        const DType dt = x.value().dtype();
        const ops::MatmulGrads g{Tensor::empty(x.value().shape(), dt),
                                 Tensor::empty(again.view.shape(), dt)};
        // With biases, their gradient comes with dW's product (ops::linear_backward_into).
        Tensor dbias;
        if (biases.empty())
          ops::matmul_backward_into(dy, x.value(), again.view, no_a_t_b, {g.da}, {g.db});
        else
          dbias = ops::linear_backward_into(dy, x.value(), again.view, {g.da}, {g.db});
        accumulate(x, g.da);
        int64_t row = 0;
        for (size_t i = 0; i < weights.size(); ++i) {
          const int64_t rows = weights[i].value().dim(0);
          accumulate(weights[i], row_block(g.db, row, rows));
          if (dbias.defined()) accumulate(biases[i], row_block(dbias, row, rows));
          row += rows;
        }
      });
}

}  // namespace qkv::autograd
