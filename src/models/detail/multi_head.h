// The Transformer's attention layers: the one attention::MultiHeadAttention over
// parameters registered in the model's store as prefix.{q,k,v,out}_proj.{weight,bias}
// (weight [E, E], bias [E]; PyTorch's names) with nn::Linear's initial values, so
// model files keep their tensor names and initial values. The bridge lives here
// because attention and nn sit side by side and neither sees the other.
#pragma once

#include <cstdint>
#include <string>

#include "qkv/attention/multi_head.h"
#include "qkv/nn/parameters.h"

namespace qkv::models::detail {

// Registers the four projections under prefix (ConfigError when dim is not a positive
// multiple of heads) and returns the attention layer that trains them.
attention::MultiHeadAttention make_multi_head(nn::ParameterStore& store, const std::string& prefix,
                                              int64_t dim, int64_t heads);

}  // namespace qkv::models::detail
