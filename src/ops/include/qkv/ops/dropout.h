// Inverted dropout with a counter-based mask (see kernels/dropout.h): element i is kept
// when CounterRng(seed, stream).uniform(offset + i) >= p and scaled by 1/(1 − p). The
// mask is a pure function of the options, so backward can regenerate it instead of saving
// it; training records it (one bit per element) and spares the second draw.
#pragma once

#include <cstdint>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct DropoutOptions {
  double p = 0.0;     // drop probability in [0, 1) (else ValueError)
  uint64_t seed = 0;  // with stream: which random sequence
  uint64_t stream = 0;
  uint64_t offset = 0;  // counter of element 0: advance it between calls
};

// x [...] -> [...] = x ⊙ mask / (1 − p).
Tensor dropout(const TensorView& x, const DropoutOptions& options);
// y = x ⊙ mask / (1 − p):  dx = dy ⊙ mask / (1 − p), same options as forward.
Tensor dropout_backward(const TensorView& dy, const DropoutOptions& options);

// The mask as forward drew it, one bit per element (kernels::dropout_forward_keep): what a
// backward reads instead of drawing it again (training's dropout: Philox once per element
// instead of twice), n/8 bytes.
struct DropoutMask {
  std::vector<uint8_t> keep;
  int64_t numel = 0;
  double p = 0.0;
};
// dropout() that also records its mask into `mask`.
Tensor dropout(const TensorView& x, const DropoutOptions& options, DropoutMask& mask);
// residual + dropout(x), the mask recorded into `mask`, in one pass (a residual
// connection: the dropped values are never stored): the bits of add(residual,
// dropout(x, options, mask)). residual and x the same shape (else ShapeError) and dtype.
// Its backward: dy to the residual as is, dropout_backward_recorded(dy, mask) to x.
Tensor dropout_add(const TensorView& residual, const TensorView& x, const DropoutOptions& options,
                   DropoutMask& mask);
// dx = dy ⊙ mask / (1 − p) from the recorded mask: the same values as dropout_backward
// with forward's options. ShapeError unless dy has the mask's element count.
Tensor dropout_backward_recorded(const TensorView& dy, const DropoutMask& mask);

}  // namespace qkv::ops
