// Matrix products on tensors: 2-D and batched, C = op(A) · op(B).
//
// F32 runs kernels::gemm / gemm_batched (OpenBLAS split over qkv's pool, deterministic
// for any thread count); F64 runs the reference triple loop (gradient checks).
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct MatmulOptions {
  bool transpose_a = false;  // A stored [..., K, M], used as its transpose
  bool transpose_b = false;  // B stored [..., N, K], used as its transpose
};

// a [..., M, K], b [..., K, N] (as stored before the optional transposes) -> [..., M, N].
// Both operands have the same rank >= 2 and equal leading (batch) dims; no broadcasting.
// Throws ShapeError naming both shapes, ValueError for mixed dtypes, ShapeError when an
// operand is empty.
Tensor matmul(const TensorView& a, const TensorView& b, const MatmulOptions& options = {});

struct MatmulGrads {
  Tensor da;  // shaped like a
  Tensor db;  // shaped like b
};

// Backward of C = op(A) · op(B):  dop(A) = dC · op(B)ᵀ,  dop(B) = op(A)ᵀ · dC,
// transposed back to A's / B's storage layout when the option flags are set.
// dy [..., M, N]; a, b as passed to matmul.
MatmulGrads matmul_backward(const TensorView& dy, const TensorView& a, const TensorView& b,
                            const MatmulOptions& options = {});

// Where matmul_backward_into writes each gradient: `grad` (contiguous, shaped like the
// operand, same dtype) receives it, or has it added (`add`: the product runs with beta 1,
// so a gradient that accumulates over many uses -- a weight applied at every decoder
// step, the attention memory read at every step -- needs no temporary and no second
// pass). An undefined `grad` skips that product (the operand needs no gradient).
struct GradTarget {
  Tensor grad;
  bool add = false;
};

// matmul_backward into caller storage. Throws like matmul_backward, and ShapeError /
// ValueError when a defined target does not match its operand (shape / dtype) or is not
// contiguous (ValueError).
void matmul_backward_into(const TensorView& dy, const TensorView& a, const TensorView& b,
                          const MatmulOptions& options, const GradTarget& da, const GradTarget& db);

}  // namespace qkv::ops
