// Elementwise arithmetic on same-shaped tensors, scaling, and a bias broadcast over the
// last dimension. Empty tensors are allowed (the result is empty).
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// a, b [...] (equal shapes and dtypes) -> [...].
Tensor add(const TensorView& a, const TensorView& b);  // a + b
Tensor sub(const TensorView& a, const TensorView& b);  // a − b
Tensor mul(const TensorView& a, const TensorView& b);  // a ⊙ b
// x [...] -> s · x.
Tensor scale(const TensorView& x, double s);
// x [..., C], bias [C] -> y[..., c] = x[..., c] + bias[c].
Tensor add_bias(const TensorView& x, const TensorView& bias);

struct BinaryGrads {
  Tensor da;  // shaped like a
  Tensor db;  // shaped like b
};

// y = a + b:  da = dy, db = dy (copies, so callers may modify them independently).
BinaryGrads add_backward(const TensorView& dy);
// y = a − b:  da = dy, db = −dy.
BinaryGrads sub_backward(const TensorView& dy);
// y = a ⊙ b:  da = dy ⊙ b, db = dy ⊙ a.  dy, a, b [...] equal shapes.
BinaryGrads mul_backward(const TensorView& dy, const TensorView& a, const TensorView& b);
// y = s · x:  dx = s · dy.
Tensor scale_backward(const TensorView& dy, double s);

struct BiasGrads {
  Tensor dx;     // [..., C] (a copy of dy)
  Tensor dbias;  // [C] = Σ over all leading positions of dy
};
// y = x + bias (broadcast):  dx = dy, dbias[c] = Σ_r dy[r, c].  dy [..., C].
BiasGrads add_bias_backward(const TensorView& dy);
// dbias alone: autograd passes dy on as dx without add_bias_backward's copy.
Tensor bias_gradient(const TensorView& dy);

// dst += src in place (equal shapes and dtypes; dst must be contiguous). Used by autograd
// to accumulate gradients.
void accumulate_into(const Tensor& dst, const TensorView& src);

}  // namespace qkv::ops
