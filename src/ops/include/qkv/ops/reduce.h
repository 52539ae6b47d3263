// Reductions: over all elements (to a rank-0, one-element tensor) and over the last dim.
// Summation order depends only on the sizes, so results do not depend on the thread count.
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// x [...] -> [] = Σ x (0 for an empty x).
Tensor sum(const TensorView& x);
// x [...] (non-empty, else ShapeError) -> [] = Σ x / numel.
Tensor mean(const TensorView& x);
// x [..., C] (rank >= 1) -> [...] = Σ_c x[..., c].
Tensor sum_last(const TensorView& x);

// y = Σ x:  dx = dy broadcast to x's shape. dy [] (one element).
Tensor sum_backward(const TensorView& dy, const Shape& x_shape);
// y = Σ x / n:  dx = dy / n everywhere.
Tensor mean_backward(const TensorView& dy, const Shape& x_shape);
// y[r] = Σ_c x[r, c]:  dx[r, c] = dy[r].  dy [...] -> dx x_shape = [..., C].
Tensor sum_last_backward(const TensorView& dy, const Shape& x_shape);

}  // namespace qkv::ops
