// Scalar reference twins of kernels/elementwise.h: plain loops, templated on the
// element type (float for kernel tests, double for gradient checks).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace qkv::kernels {

enum class Activation { Tanh, Sigmoid, Relu, Gelu };

namespace ref {

template <class T>
void add(const T* a, const T* b, T* y, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
template <class T>
void sub(const T* a, const T* b, T* y, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i];
}
template <class T>
void mul(const T* a, const T* b, T* y, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
template <class T>
void scale(const T* x, T s, T* y, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) y[i] = s * x[i];
}
template <class T>
void axpy(T alpha, const T* x, T* y, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
template <class T>
void add_bias(const T* x, const T* bias, T* y, int64_t rows, int64_t cols) noexcept {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] + bias[c];
}

template <class T>
T gelu(T x) noexcept {
  const T k = std::sqrt(T(2) / std::numbers::pi_v<T>);
  return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
}
template <class T>
T gelu_derivative(T x) noexcept {
  const T k = std::sqrt(T(2) / std::numbers::pi_v<T>);
  const T t = std::tanh(k * (x + T(0.044715) * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3 * 0.044715) * x * x);
}

template <class T>
void activation_forward(Activation f, const T* x, T* y, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    switch (f) {
      case Activation::Tanh:
        y[i] = std::tanh(v);
        break;
      case Activation::Sigmoid:
        y[i] = T(1) / (T(1) + std::exp(-v));
        break;
      case Activation::Relu:
        y[i] = v > T(0) ? v : T(0);
        break;
      case Activation::Gelu:
        y[i] = gelu(v);
        break;
    }
  }
}

template <class T>
void activation_backward(Activation f, const T* x, const T* y, const T* dy, T* dx,
                         int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) {
    switch (f) {
      case Activation::Tanh:
        dx[i] = dy[i] * (T(1) - y[i] * y[i]);
        break;
      case Activation::Sigmoid:
        dx[i] = dy[i] * y[i] * (T(1) - y[i]);
        break;
      case Activation::Relu:
        dx[i] = x[i] > T(0) ? dy[i] : T(0);
        break;
      case Activation::Gelu:
        dx[i] = dy[i] * gelu_derivative(x[i]);
        break;
    }
  }
}

}  // namespace ref
}  // namespace qkv::kernels
