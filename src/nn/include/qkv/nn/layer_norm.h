// Layer normalisation over the last dimension (Ba et al. 2016), PyTorch's nn.LayerNorm
// parameters: weight (gamma, ones) and bias (beta, zeros).
#pragma once

#include <cstdint>
#include <string>

#include "qkv/nn/parameters.h"

namespace qkv::nn {

class LayerNorm {
 public:
  // Registers prefix.weight [dim] (ones) and prefix.bias [dim] (zeros). ConfigError for
  // dim <= 0 or an eps that is not positive and finite.
  LayerNorm(ParameterStore& store, const std::string& prefix, int64_t dim, double eps = 1e-5);

  // x [..., dim] -> [..., dim]. ShapeError naming the layer when the last dim differs.
  autograd::Variable forward(const autograd::Variable& x) const;

  const autograd::Variable& weight() const noexcept { return weight_; }
  const autograd::Variable& bias() const noexcept { return bias_; }

 private:
  std::string name_;
  int64_t dim_;
  double eps_;
  autograd::Variable weight_, bias_;
};

}  // namespace qkv::nn
