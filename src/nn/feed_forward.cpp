#include "qkv/nn/feed_forward.h"

#include "qkv/autograd/functions.h"

namespace qkv::nn {

FeedForward::FeedForward(ParameterStore& store, const std::string& prefix, int64_t dim,
                         int64_t hidden, const FeedForwardOptions& options)
    : linear1_(store, child_name(prefix, "linear1"), dim, hidden),
      linear2_(store, child_name(prefix, "linear2"), hidden, dim),
      dropout_(store, child_name(prefix, "dropout"), options.dropout),
      activation_(options.activation) {}

autograd::Variable FeedForward::forward(const autograd::Variable& x) {
  const autograd::Variable h = linear1_.forward(x);
  const autograd::Variable a =
      activation_ == FeedForwardActivation::Gelu ? autograd::gelu(h) : autograd::relu(h);
  return linear2_.forward(dropout_.forward(a));
}

}  // namespace qkv::nn
