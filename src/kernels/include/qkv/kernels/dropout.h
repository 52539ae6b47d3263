// Inverted dropout (Srivastava et al. 2014) with a counter-based mask: element i is
// kept when rng.uniform(offset + i) >= p, and kept values are scaled by 1/(1 − p).
// The mask is a function of (seed, stream, offset + i) only, so backward regenerates it
// instead of storing it, and it is identical for any thread count.
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/dropout.h"

namespace qkv::kernels {

// x, y (n); p in [0, 1) (checked by ops). y may alias x.
void dropout_forward(const float* x, float* y, int64_t n, const DropoutSpec& spec) noexcept;
// dx = dy · mask / (1 − p) with the same mask as forward. dx may alias dy.
void dropout_backward(const float* dy, float* dx, int64_t n, const DropoutSpec& spec) noexcept;

}  // namespace qkv::kernels
