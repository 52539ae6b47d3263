// Scalar reference twins of kernels/layer_norm.h.
#pragma once

#include <cmath>
#include <cstdint>

namespace qkv::kernels {

template <class T>
struct LayerNormSizeT {
  int64_t rows = 0;
  int64_t cols = 0;
  T eps = T(1e-5);
};

template <class T>
struct LayerNormGrads {
  T* dx;      // (rows, cols)
  T* dgamma;  // (cols)
  T* dbeta;   // (cols)
  // dx += the gradient instead of dx = it: a residual stream's x already holds the
  // gradient from the residual branch (then no temporary dx and no extra pass adding it).
  bool accumulate_dx = false;
};

namespace ref {

template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                        const LayerNormSizeT<T>& size) noexcept {
  const int64_t cols = size.cols;
  for (int64_t r = 0; r < size.rows; ++r) {
    const T* xr = x + r * cols;
    double m = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) m += double(xr[c]);
    m /= double(cols);
    for (int64_t c = 0; c < cols; ++c) v += (double(xr[c]) - m) * (double(xr[c]) - m);
    v /= double(cols);
    const double rs = 1.0 / std::sqrt(v + double(size.eps));
    mean[r] = T(m);
    rstd[r] = T(rs);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = T((double(xr[c]) - m) * rs * double(gamma[c]) + double(beta[c]));
  }
}

template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd,
                         LayerNormGrads<T> grads, const LayerNormSizeT<T>& size) noexcept {
  const int64_t cols = size.cols;
  for (int64_t c = 0; c < cols; ++c) grads.dgamma[c] = grads.dbeta[c] = T(0);
  for (int64_t r = 0; r < size.rows; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    double mean_g = 0, mean_gx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (double(xr[c]) - double(mean[r])) * double(rstd[r]);
      const double g = double(dyr[c]) * double(gamma[c]);
      mean_g += g;
      mean_gx += g * xhat;
      grads.dgamma[c] += T(double(dyr[c]) * xhat);
      grads.dbeta[c] += dyr[c];
    }
    mean_g /= double(cols);
    mean_gx /= double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (double(xr[c]) - double(mean[r])) * double(rstd[r]);
      const double g = double(dyr[c]) * double(gamma[c]);
      const T dx = T(double(rstd[r]) * (g - mean_g - xhat * mean_gx));
      T& out = grads.dx[r * cols + c];
      out = grads.accumulate_dx ? out + dx : dx;
    }
  }
}

}  // namespace ref
}  // namespace qkv::kernels
