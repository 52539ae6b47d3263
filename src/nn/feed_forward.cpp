#include "qkv/nn/feed_forward.h"

#include "qkv/autograd/functions.h"

namespace qkv::nn {

FeedForward::FeedForward(ParameterStore& store, const std::string& prefix, int64_t dim,
                         int64_t hidden, const FeedForwardOptions& options)
    : name_(prefix),
      linear1_(store, child_name(prefix, "linear1"), dim, hidden),
      linear2_(store, child_name(prefix, "linear2"), hidden, dim),
      dropout_(store, child_name(prefix, "dropout"), options.dropout),
      activation_(options.activation) {}

autograd::Variable FeedForward::forward(const autograd::Variable& x) {
  const bool dropout_acts = dropout_.training() && dropout_.p() > 0.0;
  if (activation_ == FeedForwardActivation::Relu && !dropout_acts) {
    // One op (autograd::feed_forward_relu): the ReLU in the GEMMs' epilogues.
    const Shape& s = x.value().shape();
    QKV_CHECK(s.rank() >= 1 && s.back() == linear1_.in_features(), ShapeError, "FeedForward ",
              name_, ": x ", describe(x.value()), " must be [..., ", linear1_.in_features(), "]");
    const autograd::Variable rows =
        s.rank() == 2 ? x : autograd::reshape(x, {s.rows(), linear1_.in_features()});
    const autograd::Variable y = autograd::feed_forward_relu(
        rows, linear1_.weight(), linear1_.bias(), linear2_.weight(), linear2_.bias());
    return s.rank() == 2 ? y : autograd::reshape(y, s.with_dim(-1, linear2_.out_features()));
  }
  const autograd::Variable h = linear1_.forward(x);
  const autograd::Variable a =
      activation_ == FeedForwardActivation::Gelu ? autograd::gelu(h) : autograd::relu(h);
  return linear2_.forward(dropout_.forward(a));
}

}  // namespace qkv::nn
