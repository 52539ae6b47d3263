// Shape ops: the differentiable counterparts of Tensor::transpose / reshape. They take
// and return owning Tensors so a result can share (view) its input's storage.
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// x [..., d_a, ..., d_b, ...] -> a view with axes a and b swapped (negative axes count
// from the end; ShapeError when out of range). Shares x's storage.
Tensor transpose(const Tensor& x, int axis_a, int axis_b);
// y = transpose(x, a, b):  dx = transpose(dy, a, b) (a view of dy).
Tensor transpose_backward(const Tensor& dy, int axis_a, int axis_b);

// x [...] -> shape (equal element count, else ShapeError naming both). A view when x is
// contiguous, else a reshaped contiguous copy.
Tensor reshape(const Tensor& x, const Shape& shape);
// y = reshape(x, s):  dx = reshape(dy, x_shape).
Tensor reshape_backward(const Tensor& dy, const Shape& x_shape);

}  // namespace qkv::ops
