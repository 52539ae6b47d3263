// One name per kernel, overloaded on the element type: float calls the fast kernel in
// qkv::kernels, double its scalar reference twin in qkv::kernels::ref. Op code is written
// once as a template over T and picks the right tier through these overloads.
#pragma once

#include "qkv/kernels/cross_entropy.h"
#include "qkv/kernels/dropout.h"
#include "qkv/kernels/elementwise.h"
#include "qkv/kernels/embedding.h"
#include "qkv/kernels/gemm.h"
#include "qkv/kernels/layer_norm.h"
#include "qkv/kernels/reduce.h"
#include "qkv/kernels/softmax.h"

namespace qkv::ops::kern {

using kernels::Activation;

// ---- elementwise ----
inline void add(const float* a, const float* b, float* y, int64_t n) {
  kernels::add(a, b, y, n);
}
inline void add(const double* a, const double* b, double* y, int64_t n) {
  kernels::ref::add(a, b, y, n);
}
inline void sub(const float* a, const float* b, float* y, int64_t n) {
  kernels::sub(a, b, y, n);
}
inline void sub(const double* a, const double* b, double* y, int64_t n) {
  kernels::ref::sub(a, b, y, n);
}
inline void mul(const float* a, const float* b, float* y, int64_t n) {
  kernels::mul(a, b, y, n);
}
inline void mul(const double* a, const double* b, double* y, int64_t n) {
  kernels::ref::mul(a, b, y, n);
}
inline void scale(const float* x, double s, float* y, int64_t n) {
  kernels::scale(x, float(s), y, n);
}
inline void scale(const double* x, double s, double* y, int64_t n) {
  kernels::ref::scale(x, s, y, n);
}
inline void axpy(double alpha, const float* x, float* y, int64_t n) {
  kernels::axpy(float(alpha), x, y, n);
}
inline void axpy(double alpha, const double* x, double* y, int64_t n) {
  kernels::ref::axpy(alpha, x, y, n);
}
inline void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols) {
  kernels::add_bias(x, bias, y, rows, cols);
}
inline void add_bias(const double* x, const double* bias, double* y, int64_t rows, int64_t cols) {
  kernels::ref::add_bias(x, bias, y, rows, cols);
}
inline void activation_forward(Activation f, const float* x, float* y, int64_t n) {
  kernels::activation_forward(f, x, y, n);
}
inline void activation_forward(Activation f, const double* x, double* y, int64_t n) {
  kernels::ref::activation_forward(f, x, y, n);
}
inline void activation_backward(Activation f, const float* x, const float* y, const float* dy,
                                float* dx, int64_t n) {
  kernels::activation_backward(f, x, y, dy, dx, n);
}
inline void activation_backward(Activation f, const double* x, const double* y, const double* dy,
                                double* dx, int64_t n) {
  kernels::ref::activation_backward(f, x, y, dy, dx, n);
}

// ---- reductions ----
inline float sum(const float* x, int64_t n) {
  return kernels::sum(x, n);
}
inline double sum(const double* x, int64_t n) {
  return kernels::ref::sum(x, n);
}
inline float dot(const float* a, const float* b, int64_t n) {
  return kernels::dot(a, b, n);
}
inline double dot(const double* a, const double* b, int64_t n) {
  return kernels::ref::dot(a, b, n);
}
inline void sum_rows(const float* x, float* y, int64_t r, int64_t c) {
  kernels::sum_rows(x, y, r, c);
}
inline void sum_rows(const double* x, double* y, int64_t r, int64_t c) {
  kernels::ref::sum_rows(x, y, r, c);
}
inline void sum_cols(const float* x, float* y, int64_t r, int64_t c) {
  kernels::sum_cols(x, y, r, c);
}
inline void sum_cols(const double* x, double* y, int64_t r, int64_t c) {
  kernels::ref::sum_cols(x, y, r, c);
}

// ---- gemm ----
inline void gemm_with_bias(const kernels::GemmSpec& s, const float* a, const float* b,
                           const float* bias, float* c) {
  kernels::gemm_with_bias(s, a, b, bias, c);
}
inline void gemm_with_bias(const kernels::GemmSpec& s, const double* a, const double* b,
                           const double* bias, double* c) {
  kernels::ref::gemm_with_bias(s, a, b, bias, c);
}
inline void gemm_with_bias_relu(const kernels::GemmSpec& s, const float* a, const float* b,
                                const float* bias, float* c) {
  kernels::gemm_with_bias_relu(s, a, b, bias, c);
}
inline void gemm_with_bias_relu(const kernels::GemmSpec& s, const double* a, const double* b,
                                const double* bias, double* c) {
  kernels::ref::gemm_with_bias_relu(s, a, b, bias, c);
}
inline void gemm_gated(const kernels::GemmSpec& s, const float* a, const float* b,
                       const float* gate, int64_t ldg, float* c) {
  kernels::gemm_gated(s, a, b, gate, ldg, c);
}
inline void gemm_gated(const kernels::GemmSpec& s, const double* a, const double* b,
                       const double* gate, int64_t ldg, double* c) {
  kernels::ref::gemm_gated(s, a, b, gate, ldg, c);
}
inline void gemm(const kernels::GemmSpec& s, const float* a, const float* b, float* c) {
  kernels::gemm(s, a, b, c);
}
inline void gemm(const kernels::GemmSpec& s, const double* a, const double* b, double* c) {
  kernels::ref::gemm(s, a, b, c);
}
inline void gemm_batched(const kernels::GemmSpec& s, const kernels::BatchStrides& st,
                         const float* a, const float* b, float* c) {
  kernels::gemm_batched(s, st, a, b, c);
}
inline void gemm_batched(const kernels::GemmSpec& s, const kernels::BatchStrides& st,
                         const double* a, const double* b, double* c) {
  kernels::ref::gemm_batched(s, st, a, b, c);
}

// ---- softmax ----
inline void softmax_rows(const float* x, float* y, int64_t r, int64_t c,
                         const kernels::SoftmaxMaskT<float>& m) {
  kernels::softmax_rows(x, y, r, c, m);
}
inline void softmax_rows(const double* x, double* y, int64_t r, int64_t c,
                         const kernels::SoftmaxMaskT<double>& m) {
  kernels::ref::softmax_rows(x, y, r, c, m);
}
inline void softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t r,
                                  int64_t c) {
  kernels::softmax_rows_backward(y, dy, dx, r, c);
}
inline void softmax_rows_backward(const double* y, const double* dy, double* dx, int64_t r,
                                  int64_t c) {
  kernels::ref::softmax_rows_backward(y, dy, dx, r, c);
}
inline void log_softmax_rows(const float* x, float* y, int64_t r, int64_t c,
                             const kernels::SoftmaxMaskT<float>& m) {
  kernels::log_softmax_rows(x, y, r, c, m);
}
inline void log_softmax_rows(const double* x, double* y, int64_t r, int64_t c,
                             const kernels::SoftmaxMaskT<double>& m) {
  kernels::ref::log_softmax_rows(x, y, r, c, m);
}
inline void log_softmax_rows_backward(const float* y, const float* dy, float* dx, int64_t r,
                                      int64_t c) {
  kernels::log_softmax_rows_backward(y, dy, dx, r, c);
}
inline void log_softmax_rows_backward(const double* y, const double* dy, double* dx, int64_t r,
                                      int64_t c) {
  kernels::ref::log_softmax_rows_backward(y, dy, dx, r, c);
}

// ---- layer norm ----
inline void layer_norm_forward(const float* x, const float* g, const float* b, float* y,
                               float* mean, float* rstd, const kernels::LayerNormSizeT<float>& s) {
  kernels::layer_norm_forward(x, g, b, y, mean, rstd, s);
}
inline void layer_norm_forward(const double* x, const double* g, const double* b, double* y,
                               double* mean, double* rstd,
                               const kernels::LayerNormSizeT<double>& s) {
  kernels::ref::layer_norm_forward(x, g, b, y, mean, rstd, s);
}
inline void layer_norm_backward(const float* dy, const float* x, const float* g, const float* mean,
                                const float* rstd, kernels::LayerNormGrads<float> grads,
                                const kernels::LayerNormSizeT<float>& s) {
  kernels::layer_norm_backward(dy, x, g, mean, rstd, grads, s);
}
inline void layer_norm_backward(const double* dy, const double* x, const double* g,
                                const double* mean, const double* rstd,
                                kernels::LayerNormGrads<double> grads,
                                const kernels::LayerNormSizeT<double>& s) {
  kernels::ref::layer_norm_backward(dy, x, g, mean, rstd, grads, s);
}

// ---- embedding ----
inline void embedding_gather(const float* t, const int32_t* ids, float* out, int64_t n, int64_t d) {
  kernels::embedding_gather(t, ids, out, n, d);
}
inline void embedding_gather(const double* t, const int32_t* ids, double* out, int64_t n,
                             int64_t d) {
  kernels::ref::embedding_gather(t, ids, out, n, d);
}
inline void embedding_scatter_add(const float* dout, const int32_t* ids, float* dt, int64_t n,
                                  int64_t d) {
  kernels::embedding_scatter_add(dout, ids, dt, n, d);
}
inline void embedding_scatter_add(const double* dout, const int32_t* ids, double* dt, int64_t n,
                                  int64_t d) {
  kernels::ref::embedding_scatter_add(dout, ids, dt, n, d);
}

// ---- cross entropy ----
inline void cross_entropy_forward(const float* x, const int32_t* t, float* loss, float* lse,
                                  const kernels::CrossEntropySpec& s) {
  kernels::cross_entropy_forward(x, t, loss, lse, s);
}
inline void cross_entropy_forward(const double* x, const int32_t* t, double* loss, double* lse,
                                  const kernels::CrossEntropySpec& s) {
  kernels::ref::cross_entropy_forward(x, t, loss, lse, s);
}
inline void cross_entropy_backward(const float* x, const int32_t* t, const float* lse,
                                   const float* dloss, float* dx,
                                   const kernels::CrossEntropySpec& s) {
  kernels::cross_entropy_backward(x, t, lse, dloss, dx, s);
}
inline void cross_entropy_backward(const double* x, const int32_t* t, const double* lse,
                                   const double* dloss, double* dx,
                                   const kernels::CrossEntropySpec& s) {
  kernels::ref::cross_entropy_backward(x, t, lse, dloss, dx, s);
}

// ---- dropout ----
inline void dropout_forward(const float* x, float* y, int64_t n, const kernels::DropoutSpec& s) {
  kernels::dropout_forward(x, y, n, s);
}
inline void dropout_forward(const double* x, double* y, int64_t n, const kernels::DropoutSpec& s) {
  kernels::ref::dropout_forward(x, y, n, s);
}
inline void dropout_backward(const float* dy, float* dx, int64_t n, const kernels::DropoutSpec& s) {
  kernels::dropout_backward(dy, dx, n, s);
}
inline void dropout_backward(const double* dy, double* dx, int64_t n,
                             const kernels::DropoutSpec& s) {
  kernels::ref::dropout_backward(dy, dx, n, s);
}

}  // namespace qkv::ops::kern
