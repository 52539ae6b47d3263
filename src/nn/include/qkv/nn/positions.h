// Sinusoidal position encodings (Vaswani et al. 2017, sec. 3.5):
//   PE[p, 2i] = sin(p / 10000^(2i/E)),  PE[p, 2i+1] = cos(p / 10000^(2i/E)),
// added to the token embeddings. No parameters; the table is computed once in float64.
#pragma once

#include <cstdint>
#include <string>

#include "qkv/nn/parameters.h"

namespace qkv::nn {

class SinusoidalPositions {
 public:
  // The table [max_len, dim] in the store's dtype (the store gives no parameters, only
  // the dtype; prefix names the layer in errors). ConfigError for non-positive sizes.
  SinusoidalPositions(const ParameterStore& store, const std::string& prefix, int64_t max_len,
                      int64_t dim);

  // x [B, T, dim] -> x + PE[offset : offset + T] (the same rows for every batch entry);
  // offset is the position of x's first step (a decoder step passes t). ShapeError naming
  // the layer when the dims differ; ValueError when offset + T > max_len.
  autograd::Variable forward(const autograd::Variable& x, int64_t offset = 0) const;

  const Tensor& table() const noexcept { return table_; }  // [max_len, dim]

 private:
  std::string name_;
  Tensor table_;
};

}  // namespace qkv::nn
