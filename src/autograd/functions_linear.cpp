// Differentiable matmul, elementwise arithmetic, reductions and shape ops. Each closure
// captures what the ops backward needs (inputs are shared handles: no copies).
#include <utility>

#include "detail/record.h"
#include "qkv/autograd/functions.h"
#include "qkv/ops/broadcast.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/reduce.h"
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

}  // namespace

namespace detail {
void link_linear_functions() {}
}  // namespace detail

using detail::accumulate;

Variable matmul(const Variable& a, const Variable& b, const ops::MatmulOptions& options) {
  return detail::record(kMatmul, ops::matmul(a.value(), b.value(), options), {a, b},
                        [a, b, options](const Tensor& dy) {
                          ops::MatmulGrads g =
                              ops::matmul_backward(dy, a.value(), b.value(), options);
                          accumulate(a, std::move(g.da));
                          accumulate(b, std::move(g.db));
                        });
}

Variable add(const Variable& a, const Variable& b) {
  // y = a + b: both inputs receive dy unchanged.
  return detail::record(kAdd, ops::add(a.value(), b.value()), {a, b}, [a, b](const Tensor& dy) {
    accumulate(a, dy);
    accumulate(b, dy);
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
                        [x, bias](const Tensor& dy) {
                          ops::BiasGrads g = ops::add_bias_backward(dy);
                          accumulate(x, std::move(g.dx));
                          accumulate(bias, std::move(g.dbias));
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
  return detail::record(kReshape, ops::reshape(x.value(), shape), {x}, [x](const Tensor& dy) {
    accumulate(x, ops::reshape_backward(dy, x.value().shape()));
  });
}

}  // namespace qkv::autograd
