// Where a backward op writes one operand's gradient when the caller owns the storage.
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// `grad` (contiguous, shaped like the operand, same dtype) receives the gradient, or has
// it added (`add`): a gradient that accumulates over many uses -- a weight applied at
// every decoder step, the attention memory read at every step -- then needs no temporary
// and no second pass. An undefined `grad` means the caller has no storage for it.
struct GradTarget {
  Tensor grad;
  bool add = false;
};

}  // namespace qkv::ops
