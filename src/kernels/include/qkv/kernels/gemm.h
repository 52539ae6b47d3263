// Matrix multiplication, row-major: C = alpha · op(A) · op(B) + beta · C, with
// op(A) (m, k), op(B) (k, n), C (m, n), leading dimensions in elements.
//
// gemm()          the backend's product (below): OpenBLAS cblas_sgemm, or
//                 gemm_portable(). OpenBLAS is kept single-threaded; large products are
//                 split into fixed blocks of C over qkv's thread pool, so BLAS never
//                 oversubscribes the cores and results do not depend on the thread count.
// gemm_portable() qkv's own blocked SIMD GEMM on the micro-kernel of its fused kernels,
//                 always built and tested; faster than OpenBLAS where qkv runs AVX-512.
// ref::gemm()     the triple loop both are tested against (also the float64 path).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "qkv/base/cpu.h"
#include "qkv/kernels/reference/gemm.h"

namespace qkv::kernels {

// Which implementation gemm() and gemm_batched() run.
//   OpenBlas  cblas_sgemm, single-threaded, blocks over qkv's pool (above).
//   Portable  gemm_portable().
//   Auto      auto_gemm_backend() for this CPU and the core OpenBLAS detected.
// The environment variable QKV_GEMM=openblas|portable|auto sets the initial choice (an
// unknown value is reported on stderr and treated as auto).
enum class GemmBackend { Auto, OpenBlas, Portable };

// The rule Auto applies, from measurements (bench/README.md, *GEMM backend*):
//   Portable  where qkv runs AVX-512 (avx512f/bw/vl/dq, Highway's AVX3): its 12 × 32
//             micro-kernel made a Transformer update 6 % faster at 1 thread than
//             OpenBLAS's SkylakeX kernels (1 % at 2), decoding unchanged;
//   Portable  where the OpenBLAS core lacks the AVX2+FMA this CPU has: OpenBLAS 0.3.21
//             (Debian 12) does not recognise some recent or virtualised CPUs and falls
//             back to its SSE3 "Prescott" kernels, ~5x below what the CPU can do;
//   OpenBlas  otherwise: with AVX2 only (qkv_bench_training --simd AVX2 and
//             OPENBLAS_CORETYPE=Haswell on the same Xeon) OpenBLAS was 1-3 % faster
//             than qkv's 6 × 16 tile on the same update.
GemmBackend auto_gemm_backend(const CpuFeatures& cpu, std::string_view openblas_core) noexcept;

// Pins the backend (Auto re-applies the rule above). For tests, benchmarks and the CLI;
// not to be called while GEMMs run on other threads.
void set_gemm_backend(GemmBackend backend) noexcept;
// The backend gemm() uses now (never Auto).
GemmBackend gemm_backend() noexcept;
// "openblas (core Haswell)", "portable (AVX-512; OpenBLAS core SkylakeX not chosen)" or
// "portable (OpenBLAS core Prescott lacks AVX2/FMA)": for logs and benchmark context.
std::string gemm_backend_description();

void gemm(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept;
void gemm_portable(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept;

// gemm() that also sums op(A)'s rows: a_row_sums[i] = Σ_p op(A)[i, p] (i < m), added in
// p order from 0. With trans_a (A stored [k, m]) those are A's column sums: a linear
// layer's bias gradient Σ_rows dY, where dW = dYᵀ·X is the product. gemm_portable takes
// them from the blocks of A it copies anyway (the bias gradient's own pass over dY was
// 1.5 % of a Transformer update); otherwise they are summed after the product. The bits
// of kernels::sum_cols(a, a_row_sums, k, m) when trans_a and lda == m, on either backend.
void gemm_with_a_row_sums(const GemmSpec& spec, const float* a, const float* b, float* c,
                          float* a_row_sums) noexcept;
void gemm_portable_with_a_row_sums(const GemmSpec& spec, const float* a, const float* b, float* c,
                                   float* a_row_sums) noexcept;

// C = alpha · op(A) · op(B) + bias, the bias [n] added to every row of C (spec.beta is not
// read: C is only written), as ref::gemm_with_bias. gemm_portable adds it where its
// micro-kernel writes the first slice of k's results, C = alpha·AB_slice + bias: no pass
// over C before the product (a linear layer's rows filled with its bias were 0.8 % of a
// Transformer update). For alpha = 1 the bits of the reference's order (bias, then + AB:
// one rounding either way), which the OpenBLAS backend runs.
void gemm_with_bias(const GemmSpec& spec, const float* a, const float* b, const float* bias,
                    float* c) noexcept;
void gemm_portable_with_bias(const GemmSpec& spec, const float* a, const float* b,
                             const float* bias, float* c) noexcept;

// The two halves of a feed-forward block's ReLU, done by the GEMMs around it (ops'
// linear_relu and linear_backward_through_relu; each was a pass over [tokens, hidden] of
// its own, 1.6 % of a Transformer update):
//   gemm_with_bias_relu  C = relu(alpha · op(A) · op(B) + bias), relu(x) = x > 0 ? x : 0;
//   gemm_gated           C = gate > 0 ? alpha · op(A) · op(B) : 0, gate [m, n] with rows ldg
//                        apart, not overlapping C (read after C's earlier k slices are
//                        written; the ReLU's backward, gate = the ReLU's output).
// spec.beta is not read (C is only written). gemm_portable applies them where its
// micro-kernel writes the last slice of k's results; the OpenBLAS backend runs the
// product, then ReLU's own kernel. The bits of ref::gemm_with_bias_relu / ref::gemm_gated's
// order on either backend: the product as gemm_with_bias / gemm, then the ReLU.
void gemm_with_bias_relu(const GemmSpec& spec, const float* a, const float* b, const float* bias,
                         float* c) noexcept;
void gemm_portable_with_bias_relu(const GemmSpec& spec, const float* a, const float* b,
                                  const float* bias, float* c) noexcept;
void gemm_gated(const GemmSpec& spec, const float* a, const float* b, const float* gate,
                int64_t ldg, float* c) noexcept;
void gemm_portable_gated(const GemmSpec& spec, const float* a, const float* b, const float* gate,
                         int64_t ldg, float* c) noexcept;

// `batch` independent products; matrix i of A starts at a + i·stride_a, etc.
void gemm_batched(const GemmSpec& spec, const BatchStrides& strides, const float* a, const float* b,
                  float* c) noexcept;

}  // namespace qkv::kernels
