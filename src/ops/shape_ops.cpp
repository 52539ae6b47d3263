#include "qkv/ops/shape_ops.h"

namespace qkv::ops {

Tensor transpose(const Tensor& x, int axis_a, int axis_b) {
  return x.transpose(axis_a, axis_b);
}

Tensor transpose_backward(const Tensor& dy, int axis_a, int axis_b) {
  return dy.transpose(axis_a, axis_b);  // a swap is its own inverse
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  QKV_CHECK(shape.numel() == x.numel(), ShapeError, "reshape: cannot reshape ", describe(x), " to ",
            shape, ": element counts differ");
  return x.contiguous().reshape(shape);
}

Tensor reshape_backward(const Tensor& dy, const Shape& x_shape) {
  return reshape(dy, x_shape);
}

}  // namespace qkv::ops
