// Reductions. Results are deterministic: the summation order depends only on n (fixed
// chunking, partials combined in order), never on the thread count.
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/reduce.h"

namespace qkv::kernels {

float sum(const float* x, int64_t n) noexcept;                  // Σ x (0 for n == 0)
float dot(const float* a, const float* b, int64_t n) noexcept;  // Σ a·b
float max(const float* x, int64_t n) noexcept;                  // -inf for n == 0
// y[r] = Σ_c x[r, c]; x (rows, cols), y (rows).
void sum_rows(const float* x, float* y, int64_t rows, int64_t cols) noexcept;
// y[c] = Σ_r x[r, c]; x (rows, cols), y (cols). (Bias gradients.)
void sum_cols(const float* x, float* y, int64_t rows, int64_t cols) noexcept;

}  // namespace qkv::kernels
