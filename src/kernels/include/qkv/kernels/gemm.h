// Matrix multiplication, row-major: C = alpha · op(A) · op(B) + beta · C, with
// op(A) (m, k), op(B) (k, n), C (m, n), leading dimensions in elements.
//
// gemm()          OpenBLAS cblas_sgemm. OpenBLAS is kept single-threaded; large
//                 products are split into fixed blocks of C over qkv's thread pool,
//                 so BLAS never oversubscribes the cores and results do not depend on
//                 the thread count.
// gemm_portable() qkv's own blocked SIMD kernel, always built and tested, for builds
//                 or machines without a usable BLAS.
// ref::gemm()     the triple loop both are tested against (also the float64 path).
#pragma once

#include <cstdint>
#include <string>

#include "qkv/kernels/reference/gemm.h"

namespace qkv::kernels {

// Which implementation gemm() and gemm_batched() run.
//   OpenBlas  cblas_sgemm, single-threaded, blocks over qkv's pool (above).
//   Portable  gemm_portable().
//   Auto      OpenBlas, unless the OpenBLAS core it detected lacks the AVX2+FMA this CPU
//             has: OpenBLAS 0.3.21 (Debian 12) does not recognise some recent or
//             virtualised CPUs and falls back to its SSE3 "Prescott" kernels, about 5x
//             below what the CPU can do and ~3x below gemm_portable (bench/README.md).
// The environment variable QKV_GEMM=openblas|portable|auto sets the initial choice (an
// unknown value is reported on stderr and treated as auto).
enum class GemmBackend { Auto, OpenBlas, Portable };

// Pins the backend (Auto re-applies the rule above). For tests, benchmarks and the CLI;
// not to be called while GEMMs run on other threads.
void set_gemm_backend(GemmBackend backend) noexcept;
// The backend gemm() uses now (never Auto).
GemmBackend gemm_backend() noexcept;
// "openblas (core Haswell)" or "portable (OpenBLAS core Prescott lacks AVX2/FMA)": for
// logs and benchmark context.
std::string gemm_backend_description();

void gemm(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept;
void gemm_portable(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept;

// `batch` independent products; matrix i of A starts at a + i·stride_a, etc.
void gemm_batched(const GemmSpec& spec, const BatchStrides& strides, const float* a, const float* b,
                  float* c) noexcept;

}  // namespace qkv::kernels
