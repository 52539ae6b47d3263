#include "qkv/ops/reduce.h"

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

// The single value of a one-element tensor, as double.
double scalar_value(std::string_view op, const TensorView& dy) {
  QKV_CHECK(dy.numel() == 1, ShapeError, op, ": dy ", describe(dy), " must hold one element");
  const detail::ContiguousInput c(dy);
  return detail::visit_dtype(dy.dtype(), [&]<class T>() { return double(*c.data<T>()); });
}

}  // namespace

Tensor sum(const TensorView& x) {
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(Shape{}, x.dtype());
  detail::visit_dtype(x.dtype(),
                      [&]<class T>() { *y.data<T>() = kern::sum(cx.data<T>(), x.numel()); });
  return y;
}

Tensor mean(const TensorView& x) {
  detail::check_not_empty("mean", "x", x);
  Tensor total = sum(x);
  return detail::visit_dtype(x.dtype(), [&]<class T>() {
    *total.data<T>() = T(double(*total.data<T>()) / double(x.numel()));
    return total;
  });
}

Tensor sum_last(const TensorView& x) {
  detail::check_min_rank("sum_last", "x", x, 1);
  const detail::ContiguousInput cx(x);
  const Shape out_shape = x.shape().without_dim(-1);
  Tensor y = Tensor::empty(out_shape, x.dtype());
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::sum_rows(cx.data<T>(), y.data<T>(), out_shape.numel(), x.dim(-1));
  });
  return y;
}

Tensor sum_backward(const TensorView& dy, const Shape& x_shape) {
  return Tensor::full(x_shape, scalar_value("sum_backward", dy), dy.dtype());
}

Tensor mean_backward(const TensorView& dy, const Shape& x_shape) {
  QKV_CHECK(x_shape.numel() > 0, ShapeError, "mean_backward: x shape ", x_shape, " is empty");
  const double g = scalar_value("mean_backward", dy) / double(x_shape.numel());
  return Tensor::full(x_shape, g, dy.dtype());
}

Tensor sum_last_backward(const TensorView& dy, const Shape& x_shape) {
  QKV_CHECK(x_shape.rank() >= 1 && dy.shape() == x_shape.without_dim(-1), ShapeError,
            "sum_last_backward: dy ", describe(dy), " does not match x shape ", x_shape);
  const detail::ContiguousInput cdy(dy);
  Tensor dx = Tensor::empty(x_shape, dy.dtype());
  const int64_t rows = dy.numel(), cols = x_shape.back();
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    const T* g = cdy.data<T>();
    T* out = dx.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = g[r];
  });
  return dx;
}

}  // namespace qkv::ops
