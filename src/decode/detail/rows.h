// Small helpers shared by the searches and forced decoding.
#pragma once

#include <algorithm>
#include <cstdint>

#include "qkv/tensor/tensor.h"

namespace qkv::decode::detail {

// x as a contiguous float32 tensor: the searches read log-probabilities and attention
// rows through plain pointers, whatever dtype the model runs in.
inline Tensor as_f32(const Tensor& x) {
  return x.dtype() == DType::F32 ? x.contiguous() : x.to(DType::F32).contiguous();
}

// Rows per thread-pool chunk for a per-row pass over `width` entries (a top-k or an
// argmax over the vocabulary): chunks of ~32k entries, a few microseconds, pay for a
// hand-off.
inline int64_t rows_per_chunk(int64_t width) {
  return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, width));
}

}  // namespace qkv::decode::detail
