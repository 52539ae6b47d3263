// Layer normalisation over the last dimension (Ba et al. 2016), biased variance:
//   y = (x − mean) · rstd · gamma + beta,   rstd = 1 / sqrt(var + eps).
#pragma once

#include "qkv/ops/grad_target.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct LayerNormResult {
  Tensor y;     // [..., C]
  Tensor mean;  // [...]  saved for backward
  Tensor rstd;  // [...]  saved for backward
};

// x [..., C] (non-empty), gamma [C], beta [C]; eps > 0 and finite (else ValueError).
LayerNormResult layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta,
                           double eps = 1e-5);

struct LayerNormGradients {
  Tensor dx;      // [..., C]
  Tensor dgamma;  // [C]
  Tensor dbeta;   // [C]
};

// From y = xhat · gamma + beta with xhat = (x − mean) · rstd and g = dy · gamma:
//   dx = rstd · (g − mean_c(g) − xhat · mean_c(g · xhat)),
//   dgamma = Σ_rows dy · xhat,  dbeta = Σ_rows dy.
// dy, x [..., C]; gamma [C]; mean, rstd [...] from layer_norm.
LayerNormGradients layer_norm_backward(const TensorView& dy, const TensorView& x,
                                       const TensorView& gamma, const TensorView& mean,
                                       const TensorView& rstd);

// The same with dx written into dx.grad (x's shape and dtype, contiguous), or added to
// it when dx.add: the bits of adding a separately computed dx, without that tensor and
// the pass adding it (a pre-LN layer's x already holds its residual gradient). The
// returned dx is then undefined; without dx.grad, dx is returned as by
// layer_norm_backward.
LayerNormGradients layer_norm_backward_into(const TensorView& dy, const TensorView& x,
                                            const TensorView& gamma, const TensorView& mean,
                                            const TensorView& rstd, const GradTarget& dx);

}  // namespace qkv::ops
