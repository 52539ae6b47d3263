// Linear (affine) layer y = x Wᵀ + b in PyTorch's layout: W [out, in], so nn.Linear
// weights load unchanged.
#pragma once

#include <cstdint>
#include <string>

#include "qkv/nn/parameters.h"

namespace qkv::nn {

class Linear {
 public:
  // Registers prefix.weight [out, in] (Xavier uniform) and, when `bias`, prefix.bias [out]
  // (zeros). ConfigError for non-positive sizes.
  Linear(ParameterStore& store, const std::string& prefix, int64_t in_features,
         int64_t out_features, bool bias = true);

  // x [..., in] -> [..., out]. ShapeError (naming the layer) when the last dim is not in.
  autograd::Variable forward(const autograd::Variable& x) const;

  const autograd::Variable& weight() const noexcept { return weight_; }
  const autograd::Variable& bias() const noexcept { return bias_; }  // undefined: no bias
  int64_t in_features() const noexcept { return in_; }
  int64_t out_features() const noexcept { return out_; }

 private:
  std::string name_;
  int64_t in_, out_;
  autograd::Variable weight_, bias_;
};

}  // namespace qkv::nn
