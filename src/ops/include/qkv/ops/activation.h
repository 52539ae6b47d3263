// Pointwise nonlinearities. GELU is the tanh approximation (see kernels/elementwise.h).
// Empty tensors are allowed (the result is empty).
#pragma once

#include "qkv/kernels/reference/elementwise.h"  // kernels::Activation
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

using kernels::Activation;

// x [...] -> f(x) [...].
Tensor activation(Activation f, const TensorView& x);
Tensor tanh(const TensorView& x);
Tensor sigmoid(const TensorView& x);
Tensor relu(const TensorView& x);
Tensor gelu(const TensorView& x);

// y = f(x):  dx = dy ⊙ f'(x). tanh' = 1 − y², sigmoid' = y(1 − y) read the forward output
// y; relu' and gelu' read x. dy, x, y [...] all the shape of x.
Tensor activation_backward(Activation f, const TensorView& dy, const TensorView& x,
                           const TensorView& y);

// "tanh", "sigmoid", "relu", "gelu".
const char* activation_name(Activation f) noexcept;

}  // namespace qkv::ops
