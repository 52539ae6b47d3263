// Inverted dropout with a counter-based mask (see kernels/dropout.h): element i is kept
// when CounterRng(seed, stream).uniform(offset + i) >= p and scaled by 1/(1 − p). The
// mask is a pure function of the options, so backward regenerates it instead of saving it.
#pragma once

#include <cstdint>

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

}  // namespace qkv::ops
