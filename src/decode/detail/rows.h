// Small helpers shared by the searches and forced decoding.
#pragma once

#include "qkv/tensor/tensor.h"

namespace qkv::decode::detail {

// x as a contiguous float32 tensor: the searches read log-probabilities and attention
// rows through plain pointers, whatever dtype the model runs in.
inline Tensor as_f32(const Tensor& x) {
  return x.dtype() == DType::F32 ? x.contiguous() : x.to(DType::F32).contiguous();
}

}  // namespace qkv::decode::detail
