// L2 normalisation over the last dimension: the building block of cosine attention
// scores, q·k / (|q| |k|) = (q/|q|)·(k/|k|).
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// Default guard of l2_normalize, PyTorch's F.normalize eps: far below any norm that
// float32 features reach in practice, yet keeps 1/n finite for a zero vector.
inline constexpr double kL2NormalizeEps = 1e-12;

// x [..., D] (non-empty, rank >= 1) -> y [..., D] = x / max(|x|, eps), |x| = sqrt(Σ_d x²).
// The eps guard makes a zero vector map to zero (not NaN); eps must be finite and > 0
// (else ValueError). Same formula as torch.nn.functional.normalize(x, dim=-1, eps=eps).
Tensor l2_normalize(const TensorView& x, double eps = kL2NormalizeEps);

// y = x / n with n = |x| (unclamped rows):  dx = (dy − y (y·dy)) / n,
//   i.e. dx = dy / n − x (x·dy) / n³ (the norm's Jacobian removes the radial part).
// Rows where |x| < eps were divided by the constant eps:  dx = dy / eps (finite, but
// large: the direction of a near-zero vector is ill-conditioned).
// dy, x [..., D] equal shapes and dtypes.
Tensor l2_normalize_backward(const TensorView& dy, const TensorView& x,
                             double eps = kL2NormalizeEps);

}  // namespace qkv::ops
