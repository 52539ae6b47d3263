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

#include "qkv/kernels/reference/gemm.h"

namespace qkv::kernels {

void gemm(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept;
void gemm_portable(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept;

// `batch` independent products; matrix i of A starts at a + i·stride_a, etc.
void gemm_batched(const GemmSpec& spec, const BatchStrides& strides, const float* a,
                  const float* b, float* c) noexcept;

}  // namespace qkv::kernels
