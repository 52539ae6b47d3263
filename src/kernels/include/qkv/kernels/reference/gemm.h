// Reference twin of kernels/gemm.h: the plain triple loop, double accumulation.
#pragma once

#include <cstdint>

namespace qkv::kernels {

struct GemmSpec {
  bool trans_a = false;  // A stored (k, m) and used transposed
  bool trans_b = false;  // B stored (n, k) and used transposed
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;  // beta == 0 overwrites C (NaNs in C are not kept)
  int64_t lda = 0, ldb = 0, ldc = 0;
};

struct BatchStrides {
  int64_t batch = 1;
  int64_t a = 0, b = 0, c = 0;  // elements between consecutive matrices
};

namespace ref {

template <class T>
void gemm(const GemmSpec& s, const T* a, const T* b, T* c) noexcept {
  // Element (i, p) of op(A) is a[i·a_row + p·a_col], element (p, j) of op(B) is
  // b[p·b_row + j·b_col].
  const int64_t a_row = s.trans_a ? 1 : s.lda, a_col = s.trans_a ? s.lda : 1;
  const int64_t b_row = s.trans_b ? 1 : s.ldb, b_col = s.trans_b ? s.ldb : 1;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < s.k; ++p)
        acc += double(a[i * a_row + p * a_col]) * double(b[p * b_row + j * b_col]);
      T& out = c[i * s.ldc + j];
      out = T(s.alpha * acc + (s.beta == 0.0 ? 0.0 : s.beta * double(out)));
    }
}

template <class T>
void gemm_batched(const GemmSpec& s, const BatchStrides& st, const T* a, const T* b,
                  T* c) noexcept {
  for (int64_t i = 0; i < st.batch; ++i) gemm(s, a + i * st.a, b + i * st.b, c + i * st.c);
}

// C = alpha · op(A) · op(B) + bias, the bias [n] added to every row of C (s.beta is not
// read: C is only written): C's rows filled with the bias, then the product added to them.
template <class T>
void gemm_with_bias(const GemmSpec& s, const T* a, const T* b, const T* bias, T* c) noexcept {
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) c[i * s.ldc + j] = bias[j];
  GemmSpec added = s;
  added.beta = 1.0;
  gemm(added, a, b, c);
}

// C = relu(alpha · op(A) · op(B) + bias): gemm_with_bias, then x > 0 ? x : 0 (-0 and NaN
// become +0, as the ReLU kernel).
template <class T>
void gemm_with_bias_relu(const GemmSpec& s, const T* a, const T* b, const T* bias, T* c) noexcept {
  gemm_with_bias(s, a, b, bias, c);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      T& x = c[i * s.ldc + j];
      x = x > T(0) ? x : T(0);
    }
}

// C = gate > 0 ? alpha · op(A) · op(B) : 0, gate [m, n] with rows ldg apart (s.beta is not
// read): ReLU's backward through the product, gate = the ReLU's output (or its input).
template <class T>
void gemm_gated(const GemmSpec& s, const T* a, const T* b, const T* gate, int64_t ldg,
                T* c) noexcept {
  GemmSpec plain = s;
  plain.beta = 0.0;
  gemm(plain, a, b, c);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j)
      if (!(gate[i * ldg + j] > T(0))) c[i * s.ldc + j] = T(0);
}

// Compiled once, in the kernels library (gemm.cpp), for float and double: every caller
// runs the library's optimised copy. Without this each file that calls gemm<T> would
// compile its own, and the linker keeps any one of them: in the ci preset a test file's
// -O0 copy, which then served the library's fallbacks and the float64 ops as well.
extern template void gemm<float>(const GemmSpec&, const float*, const float*, float*) noexcept;
extern template void gemm<double>(const GemmSpec&, const double*, const double*, double*) noexcept;

}  // namespace ref
}  // namespace qkv::kernels
