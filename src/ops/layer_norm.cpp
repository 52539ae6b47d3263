#include "qkv/ops/layer_norm.h"

#include <cmath>

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

void check_parameters(std::string_view op, const TensorView& x, const TensorView& gamma) {
  detail::check_min_rank(op, "x", x, 1);
  detail::check_not_empty(op, "x", x);
  detail::check_same_dtype(op, x, gamma);
  QKV_CHECK(gamma.rank() == 1 && gamma.dim(0) == x.dim(-1), ShapeError, op, ": gamma ",
            describe(gamma), " does not match the last dim of x ", describe(x));
}

void check_row_stats(std::string_view op, const TensorView& x, const TensorView& stat) {
  detail::check_same_dtype(op, x, stat);
  QKV_CHECK(stat.shape() == x.shape().without_dim(-1), ShapeError, op, ": saved statistic ",
            describe(stat), " does not match x ", describe(x));
}

}  // namespace

LayerNormResult layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta,
                           double eps) {
  check_parameters("layer_norm", x, gamma);
  detail::check_same_dtype("layer_norm", x, beta);
  QKV_CHECK(beta.shape() == gamma.shape(), ShapeError, "layer_norm: beta ", describe(beta),
            " does not match gamma ", describe(gamma));
  QKV_CHECK(std::isfinite(eps) && eps > 0, ValueError, "layer_norm: eps ", eps,
            " must be positive and finite");
  const detail::ContiguousInput cx(x), cg(gamma), cb(beta);
  const Shape row_shape = x.shape().without_dim(-1);
  LayerNormResult r{Tensor::empty(x.shape(), x.dtype()), Tensor::empty(row_shape, x.dtype()),
                    Tensor::empty(row_shape, x.dtype())};
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    const kernels::LayerNormSizeT<T> size{row_shape.numel(), x.dim(-1), T(eps)};
    kern::layer_norm_forward(cx.data<T>(), cg.data<T>(), cb.data<T>(), r.y.data<T>(),
                             r.mean.data<T>(), r.rstd.data<T>(), size);
  });
  return r;
}

LayerNormGradients layer_norm_backward(const TensorView& dy, const TensorView& x,
                                       const TensorView& gamma, const TensorView& mean,
                                       const TensorView& rstd) {
  return layer_norm_backward_into(dy, x, gamma, mean, rstd, {});
}

LayerNormGradients layer_norm_backward_into(const TensorView& dy, const TensorView& x,
                                            const TensorView& gamma, const TensorView& mean,
                                            const TensorView& rstd, const GradTarget& dx) {
  constexpr std::string_view op = "layer_norm_backward";
  check_parameters(op, x, gamma);
  detail::check_same_dtype(op, dy, x);
  detail::check_same_shape(op, dy, x);
  check_row_stats(op, x, mean);
  check_row_stats(op, x, rstd);
  detail::check_grad_target(op, "dx", dx, x);
  const detail::ContiguousInput cdy(dy), cx(x), cg(gamma), cm(mean), cr(rstd);
  LayerNormGradients g{dx.grad.defined() ? Tensor() : Tensor::empty(x.shape(), x.dtype()),
                       Tensor::empty(gamma.shape(), x.dtype()),
                       Tensor::empty(gamma.shape(), x.dtype())};
  const Tensor& out = dx.grad.defined() ? dx.grad : g.dx;
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    const kernels::LayerNormSizeT<T> size{mean.numel(), x.dim(-1), T(0)};
    kern::layer_norm_backward(
        cdy.data<T>(), cx.data<T>(), cg.data<T>(), cm.data<T>(), cr.data<T>(),
        {out.data<T>(), g.dgamma.data<T>(), g.dbeta.data<T>(), dx.grad.defined() && dx.add}, size);
  });
  return g;
}

}  // namespace qkv::ops
