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

// The mask recorded instead of regenerated: dropout_forward that also writes it to keep,
// bit i % 8 of keep[i / 8] (least significant first) set where element i is kept
// (dropout_keep_bytes(n) bytes, all written); and the backward from those bits, the bits
// of dropout_backward with forward's spec. Regenerating it evaluates Philox4x32-10 once
// more per four elements: about half of dropout's time in a Transformer update.
void dropout_forward_keep(const float* x, float* y, int64_t n, const DropoutSpec& spec,
                          uint8_t* keep) noexcept;
void dropout_backward_keep(const float* dy, float* dx, int64_t n, double p,
                           const uint8_t* keep) noexcept;
// y = residual + dropout_forward_keep(x) in one pass (a residual connection's dropout and
// add; the dropped values never stored): the bits of the two (the sum rounds once either
// way). y may alias residual or x.
void dropout_add_forward_keep(const float* residual, const float* x, float* y, int64_t n,
                              const DropoutSpec& spec, uint8_t* keep) noexcept;

}  // namespace qkv::kernels
