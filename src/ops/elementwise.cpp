#include "qkv/ops/elementwise.h"

#include <cmath>

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

// The shared body of add/sub/mul: check, stage strided inputs, run `kernel` over n.
template <class Kernel>
Tensor binary(std::string_view op, const TensorView& a, const TensorView& b, Kernel kernel) {
  detail::check_same_dtype(op, a, b);
  detail::check_same_shape(op, a, b);
  const detail::ContiguousInput ca(a), cb(b);
  Tensor y = Tensor::empty(a.shape(), a.dtype());
  detail::visit_dtype(
      a.dtype(), [&]<class T>() { kernel(ca.data<T>(), cb.data<T>(), y.data<T>(), a.numel()); });
  return y;
}

Tensor copy_of(const TensorView& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  copy_into(t, out);
  return out;
}

}  // namespace

Tensor add(const TensorView& a, const TensorView& b) {
  return binary("add", a, b,
                [](const auto* x, const auto* y, auto* z, int64_t n) { kern::add(x, y, z, n); });
}

Tensor sub(const TensorView& a, const TensorView& b) {
  return binary("sub", a, b,
                [](const auto* x, const auto* y, auto* z, int64_t n) { kern::sub(x, y, z, n); });
}

Tensor mul(const TensorView& a, const TensorView& b) {
  return binary("mul", a, b,
                [](const auto* x, const auto* y, auto* z, int64_t n) { kern::mul(x, y, z, n); });
}

Tensor scale(const TensorView& x, double s) {
  QKV_CHECK(std::isfinite(s), ValueError, "scale: factor ", s, " is not finite");
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  detail::visit_dtype(x.dtype(),
                      [&]<class T>() { kern::scale(cx.data<T>(), s, y.data<T>(), x.numel()); });
  return y;
}

Tensor add_bias(const TensorView& x, const TensorView& bias) {
  detail::check_same_dtype("add_bias", x, bias);
  detail::check_min_rank("add_bias", "x", x, 1);
  QKV_CHECK(bias.rank() == 1 && bias.dim(0) == x.dim(-1), ShapeError, "add_bias: bias ",
            describe(bias), " does not match the last dim of x ", describe(x));
  const detail::ContiguousInput cx(x), cb(bias);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  const int64_t cols = x.dim(-1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::add_bias(cx.data<T>(), cb.data<T>(), y.data<T>(), rows, cols);
  });
  return y;
}

BinaryGrads add_backward(const TensorView& dy) {
  return {copy_of(dy), copy_of(dy)};
}

BinaryGrads sub_backward(const TensorView& dy) {
  return {copy_of(dy), scale(dy, -1.0)};
}

BinaryGrads mul_backward(const TensorView& dy, const TensorView& a, const TensorView& b) {
  detail::check_same_shape("mul_backward", dy, a);
  return {mul(dy, b), mul(dy, a)};
}

Tensor scale_backward(const TensorView& dy, double s) {
  return scale(dy, s);
}

Tensor bias_gradient(const TensorView& dy) {
  detail::check_min_rank("bias_gradient", "dy", dy, 1);
  const detail::ContiguousInput cdy(dy);
  const int64_t cols = dy.dim(-1);
  const int64_t rows = cols == 0 ? 0 : dy.numel() / cols;
  Tensor dbias = Tensor::empty(Shape{cols}, dy.dtype());
  detail::visit_dtype(
      dy.dtype(), [&]<class T>() { kern::sum_cols(cdy.data<T>(), dbias.data<T>(), rows, cols); });
  return dbias;
}

BiasGrads add_bias_backward(const TensorView& dy) {
  detail::check_min_rank("add_bias_backward", "dy", dy, 1);
  return {copy_of(dy), bias_gradient(dy)};
}

void accumulate_into(const Tensor& dst, const TensorView& src) {
  detail::check_same_dtype("accumulate_into", dst, src);
  detail::check_same_shape("accumulate_into", dst, src);
  QKV_CHECK(dst.is_contiguous(), ValueError, "accumulate_into: destination ", describe(dst),
            " is not contiguous");
  const detail::ContiguousInput csrc(src);
  detail::visit_dtype(
      dst.dtype(), [&]<class T>() { kern::axpy(1.0, csrc.data<T>(), dst.data<T>(), dst.numel()); });
}

}  // namespace qkv::ops
