// Scalar reference twins of kernels/reduce.h. Accumulate in double so the reference is
// more accurate than the kernel it checks.
#pragma once

#include <cstdint>
#include <limits>

namespace qkv::kernels::ref {

template <class T>
T sum(const T* x, int64_t n) noexcept {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]);
  return T(s);
}
template <class T>
T dot(const T* a, const T* b, int64_t n) noexcept {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return T(s);
}
template <class T>
T max(const T* x, int64_t n) noexcept {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}
template <class T>
void sum_rows(const T* x, T* y, int64_t rows, int64_t cols) noexcept {
  for (int64_t r = 0; r < rows; ++r) y[r] = sum(x + r * cols, cols);
}
template <class T>
void sum_cols(const T* x, T* y, int64_t rows, int64_t cols) noexcept {
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) s += double(x[r * cols + c]);
    y[c] = T(s);
  }
}

inline int64_t find_not_below(const float* x, int64_t n, float t) noexcept {
  for (int64_t i = 0; i < n; ++i)
    if (!(x[i] < t)) return i;
  return n;
}
inline int64_t find_above(const float* x, int64_t n, float t) noexcept {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > t) return i;
  return n;
}

}  // namespace qkv::kernels::ref
