// Position-wise feed-forward block (Vaswani et al. 2017, sec. 3.3):
//   y = linear2(dropout(act(linear1(x)))),  act = ReLU or GELU.
#pragma once

#include <cstdint>
#include <string>

#include "qkv/nn/dropout.h"
#include "qkv/nn/linear.h"

namespace qkv::nn {

enum class FeedForwardActivation { Relu, Gelu };

struct FeedForwardOptions {
  FeedForwardActivation activation = FeedForwardActivation::Relu;
  double dropout = 0.0;  // on the hidden activations, training mode only
};

class FeedForward {
 public:
  // Registers prefix.linear1 [hidden, dim] and prefix.linear2 [dim, hidden] (each with a
  // bias); the dropout layer is prefix.dropout.
  FeedForward(ParameterStore& store, const std::string& prefix, int64_t dim, int64_t hidden,
              const FeedForwardOptions& options = {});

  // x [..., dim] -> [..., dim]. With ReLU and no dropout acting (eval mode, or p = 0) as
  // one op, autograd::feed_forward_relu (the same bits as the layers one by one).
  autograd::Variable forward(const autograd::Variable& x);

  void set_training(bool training) noexcept { dropout_.set_training(training); }
  const Linear& linear1() const noexcept { return linear1_; }
  const Linear& linear2() const noexcept { return linear2_; }

 private:
  std::string name_;
  Linear linear1_, linear2_;
  Dropout dropout_;
  FeedForwardActivation activation_;
};

}  // namespace qkv::nn
