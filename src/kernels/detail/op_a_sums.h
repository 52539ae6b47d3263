// The row sums of a product's op(A), for gemm_with_a_row_sums where the product itself
// cannot take them (OpenBLAS, !trans_a, degenerate sizes). Private to src/kernels.
#pragma once

#include "qkv/kernels/gemm.h"

namespace qkv::kernels::detail {

// sums[i] = Σ_p op(A)[i, p] for i < m, added in p order from 0: with trans_a and
// lda == m the bits of kernels::sum_cols(a, sums, k, m).
void sum_rows_of_op_a(const GemmSpec& spec, const float* a, float* sums) noexcept;

}  // namespace qkv::kernels::detail
