// Matrix products on tensors: 2-D and batched, C = op(A) · op(B).
//
// F32 runs kernels::gemm / gemm_batched (OpenBLAS split over qkv's pool, deterministic
// for any thread count); F64 runs the reference triple loop (gradient checks).
#pragma once

#include "qkv/ops/grad_target.h"
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

// x [M, K], w [N, K], bias [N] -> x · wᵀ + bias [M, N] (PyTorch's Linear): C starts as the
// bias rows and the product adds into it (GEMM with beta 1), so no pass zeroes C and none
// adds the bias afterwards. Equal to matmul + add_bias up to the summation order (the bias
// is added first). Errors as matmul's; ShapeError when bias is not [N].
Tensor linear(const TensorView& x, const TensorView& w, const TensorView& bias);

// relu(x · wᵀ + bias), relu(v) = v > 0 ? v : 0: a feed-forward block's first layer with
// its activation done where the product writes its results (kernels::gemm_with_bias_relu),
// so the pre-activation is never stored. The bits of ops::relu(linear(x, w, bias)); shapes
// and errors as linear's (errors name linear_relu).
Tensor linear_relu(const TensorView& x, const TensorView& w, const TensorView& bias);

// The input gradient of a linear layer whose input came out of a ReLU, through that ReLU:
// given dy [M, N], w [N, K] and h = relu(pre) [M, K] (the layer's input), returns
// d pre = (dy · w) ⊙ [h > 0] [M, K], the gate applied where the product writes
// (kernels::gemm_gated). The bits of ops::activation_backward(Relu, dy · w, h, h).
// Throws ShapeError naming the operands when they do not fit, ValueError for mixed dtypes.
Tensor linear_backward_through_relu(const TensorView& dy, const TensorView& w,
                                    const TensorView& relu_output);

struct MatmulGrads {
  Tensor da;  // shaped like a
  Tensor db;  // shaped like b
};

// Backward of C = op(A) · op(B):  dop(A) = dC · op(B)ᵀ,  dop(B) = op(A)ᵀ · dC,
// transposed back to A's / B's storage layout when the option flags are set.
// dy [..., M, N]; a, b as passed to matmul.
MatmulGrads matmul_backward(const TensorView& dy, const TensorView& a, const TensorView& b,
                            const MatmulOptions& options = {});

// matmul_backward into caller storage (grad_target.h); an undefined target skips that
// product (the operand needs no gradient). Throws like matmul_backward, and ShapeError /
// ValueError when a defined target does not match its operand (shape / dtype) or is not
// contiguous (ValueError).
void matmul_backward_into(const TensorView& dy, const TensorView& a, const TensorView& b,
                          const MatmulOptions& options, const GradTarget& da, const GradTarget& db);

// The backward of linear (y = x·wᵀ + bias; x [M, K], w [N, K], dy [M, N]): dx and dw into
// caller storage as matmul_backward_into with transpose_b, and the bias gradient Σ_rows dy
// [N] returned, with the bits of bias_gradient(dy). In float the dw product takes the sums
// from the blocks of dy it reads anyway (kernels::gemm_with_a_row_sums): no second pass
// over dy. Errors as matmul_backward_into.
Tensor linear_backward_into(const TensorView& dy, const TensorView& x, const TensorView& w,
                            const GradTarget& dx, const GradTarget& dw);

}  // namespace qkv::ops
