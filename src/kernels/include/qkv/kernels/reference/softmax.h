// Scalar reference twins of kernels/softmax.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace qkv::kernels {

// Which columns of row r are visible:
//  - valid_lengths (rows): columns c >= valid_lengths[r] are masked (key padding);
//  - bias: added to the scores, row r at bias + r * bias_row_stride (stride 0 broadcasts
//    one row); -inf masks a column (causal masks).
// Either may be null. A column is visible when it passes both.
template <class T>
struct SoftmaxMaskT {
  const int64_t* valid_lengths = nullptr;
  const T* bias = nullptr;
  int64_t bias_row_stride = 0;
};

namespace ref {

template <class T>
int64_t visible_cols(const SoftmaxMaskT<T>& mask, int64_t r, int64_t cols) noexcept {
  if (mask.valid_lengths == nullptr) return cols;
  const int64_t v = mask.valid_lengths[r];
  return v < 0 ? 0 : (v > cols ? cols : v);
}

// Masked scores of row r into s (cols): -inf where masked. Returns the row maximum.
template <class T>
T masked_scores(const T* x, const SoftmaxMaskT<T>& mask, int64_t r, int64_t cols, T* s) noexcept {
  const T inf = std::numeric_limits<T>::infinity();
  const int64_t visible = visible_cols(mask, r, cols);
  const T* bias = mask.bias ? mask.bias + r * mask.bias_row_stride : nullptr;
  T m = -inf;
  for (int64_t c = 0; c < cols; ++c) {
    s[c] = c < visible ? x[r * cols + c] + (bias ? bias[c] : T(0)) : -inf;
    m = s[c] > m ? s[c] : m;
  }
  return m;
}

template <class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t cols,
                  const SoftmaxMaskT<T>& mask = {}) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    T* out = y + r * cols;
    const T m = masked_scores(x, mask, r, cols, out);
    if (m == -std::numeric_limits<T>::infinity()) {  // fully masked row
      for (int64_t c = 0; c < cols; ++c) out[c] = T(0);
      continue;
    }
    double total = 0;
    for (int64_t c = 0; c < cols; ++c) total += double(out[c] = std::exp(out[c] - m));
    for (int64_t c = 0; c < cols; ++c) out[c] = T(double(out[c]) / total);
  }
}

template <class T>
void softmax_rows_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    double inner = 0;
    for (int64_t c = 0; c < cols; ++c) inner += double(yr[c]) * double(dyr[c]);
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] = T(double(yr[c]) * (double(dyr[c]) - inner));
  }
}

template <class T>
void log_softmax_rows(const T* x, T* y, int64_t rows, int64_t cols,
                      const SoftmaxMaskT<T>& mask = {}) noexcept {
  const T inf = std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* out = y + r * cols;
    const T m = masked_scores(x, mask, r, cols, out);
    if (m == -inf) continue;  // all entries already -inf
    double total = 0;
    for (int64_t c = 0; c < cols; ++c) total += std::exp(double(out[c]) - double(m));
    const T lse = T(double(m) + std::log(total));
    for (int64_t c = 0; c < cols; ++c) out[c] = out[c] == -inf ? -inf : out[c] - lse;
  }
}

template <class T>
void log_softmax_rows_backward(const T* y, const T* dy, T* dx, int64_t rows,
                               int64_t cols) noexcept {
  const T inf = std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    double total = 0;
    for (int64_t c = 0; c < cols; ++c)
      if (yr[c] != -inf) total += double(dyr[c]);
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] = yr[c] == -inf ? T(0) : T(double(dyr[c]) - std::exp(double(yr[c])) * total);
  }
}

}  // namespace ref
}  // namespace qkv::kernels
