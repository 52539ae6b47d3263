// Layer normalisation over the last dimension (Ba et al. 2016):
//   y = (x − mean) · rstd · gamma + beta,   rstd = 1 / sqrt(var + eps),
// with the biased variance (divide by cols), as PyTorch's nn.LayerNorm.
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/layer_norm.h"

namespace qkv::kernels {

using LayerNormSize = LayerNormSizeT<float>;

// x, y (rows, cols); gamma, beta (cols); mean, rstd (rows), saved for backward.
void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* rstd, const LayerNormSize& size) noexcept;

// Writes dx (rows, cols), dgamma and dbeta (cols) -- overwritten, not accumulated; dx
// accumulated instead when grads.accumulate_dx (dx + the gradient, one rounding: the same
// bits as adding a separately written dx).
// With xhat = (x − mean)·rstd and g = dy·gamma:
//   dx = rstd · (g − mean_c(g) − xhat · mean_c(g·xhat)),
//   dgamma = Σ_r dy·xhat,  dbeta = Σ_r dy.
void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, LayerNormGrads<float> grads,
                         const LayerNormSize& size) noexcept;

}  // namespace qkv::kernels
