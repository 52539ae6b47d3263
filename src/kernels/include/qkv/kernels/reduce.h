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

// Searches along a row of log-probabilities (beam search's top-k, greedy's argmax): nearly
// every entry lies below the best found so far, so whole vectors are passed over with one
// comparison each. Serial; the first match, so the result is the same on every target.
// The first i in [0, n) with !(x[i] < t) -- x[i] >= t, or x[i] NaN --; n if there is none.
int64_t find_not_below(const float* x, int64_t n, float t) noexcept;
// The first i in [0, n) with x[i] > t (a NaN never is); n if there is none.
int64_t find_above(const float* x, int64_t n, float t) noexcept;

}  // namespace qkv::kernels
