#include "qkv/ops/activation.h"

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {

const char* activation_name(Activation f) noexcept {
  switch (f) {
    case Activation::Tanh:
      return "tanh";
    case Activation::Sigmoid:
      return "sigmoid";
    case Activation::Relu:
      return "relu";
    case Activation::Gelu:
      return "gelu";
  }
  return "activation";
}

Tensor activation(Activation f, const TensorView& x) {
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::activation_forward(f, cx.data<T>(), y.data<T>(), x.numel());
  });
  return y;
}

Tensor tanh(const TensorView& x) {
  return activation(Activation::Tanh, x);
}
Tensor sigmoid(const TensorView& x) {
  return activation(Activation::Sigmoid, x);
}
Tensor relu(const TensorView& x) {
  return activation(Activation::Relu, x);
}
Tensor gelu(const TensorView& x) {
  return activation(Activation::Gelu, x);
}

Tensor activation_backward(Activation f, const TensorView& dy, const TensorView& x,
                           const TensorView& y) {
  const std::string op = std::string(activation_name(f)) + "_backward";
  detail::check_same_dtype(op, dy, x);
  detail::check_same_dtype(op, dy, y);
  detail::check_same_shape(op, dy, x);
  detail::check_same_shape(op, dy, y);
  const detail::ContiguousInput cdy(dy), cx(x), cy(y);
  Tensor dx = Tensor::empty(x.shape(), x.dtype());
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::activation_backward(f, cx.data<T>(), cy.data<T>(), cdy.data<T>(), dx.data<T>(),
                              x.numel());
  });
  return dx;
}

}  // namespace qkv::ops
