// Softmax and log-softmax over the last dimension of a (rows, cols) matrix, with
// masking hooks for attention (key lengths, additive bias such as a causal -inf mask).
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/softmax.h"

namespace qkv::kernels {

using SoftmaxMask = SoftmaxMaskT<float>;

// y = softmax(x + bias) over visible columns; masked columns get 0. A row with no
// visible column (or only -inf scores) is all zeros, never NaN. y may alias x.
void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols,
                  const SoftmaxMask& mask = {}) noexcept;
// dx = y ⊙ (dy − Σ_c y⊙dy) per row. Masked positions have y = 0, so dx = 0 there.
void softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows,
                           int64_t cols) noexcept;

// y = log_softmax(x + bias) over visible columns; masked columns (and every column of a
// fully masked row) get -inf. y may alias x.
void log_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols,
                      const SoftmaxMask& mask = {}) noexcept;
// dx = dy − exp(y) · Σ_visible dy per row; 0 where y = -inf (masked).
void log_softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t rows,
                               int64_t cols) noexcept;

}  // namespace qkv::kernels
