// Elementwise kernels over n contiguous floats. x, y may alias (in-place) unless noted.
// Float64 twins (for gradient checks) live in reference/elementwise.h.
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/elementwise.h"

namespace qkv::kernels {

void add(const float* a, const float* b, float* y, int64_t n) noexcept;  // y = a + b
void sub(const float* a, const float* b, float* y, int64_t n) noexcept;  // y = a - b
void mul(const float* a, const float* b, float* y, int64_t n) noexcept;  // y = a * b
void scale(const float* x, float s, float* y, int64_t n) noexcept;       // y = s * x
void axpy(float alpha, const float* x, float* y, int64_t n) noexcept;    // y += alpha * x
// y[r, c] = x[r, c] + bias[c]; x, y (rows, cols), bias (cols).
void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols) noexcept;

// y = f(x). GELU is the tanh approximation (Hendrycks & Gimpel 2016, eq. in sec. 2):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as in GPT-2 and PyTorch's
// gelu(approximate='tanh').
void activation_forward(Activation f, const float* x, float* y, int64_t n) noexcept;
// dx = dy * f'(x). Tanh and Sigmoid read y (the forward output), Relu and Gelu read x;
// pass both. dx may alias dy.
void activation_backward(Activation f, const float* x, const float* y, const float* dy, float* dx,
                         int64_t n) noexcept;

}  // namespace qkv::kernels
