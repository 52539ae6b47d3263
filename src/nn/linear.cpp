#include "qkv/nn/linear.h"

#include "qkv/autograd/functions.h"

namespace qkv::nn {

Linear::Linear(ParameterStore& store, const std::string& prefix, int64_t in_features,
               int64_t out_features, bool bias)
    : name_(prefix), in_(in_features), out_(out_features) {
  QKV_CHECK(in_features > 0 && out_features > 0, ConfigError, "Linear ", prefix, ": sizes ",
            in_features, " -> ", out_features, " must be positive");
  weight_ =
      store.add(child_name(prefix, "weight"), {out_features, in_features}, xavier_uniform_init());
  if (bias) bias_ = store.add(child_name(prefix, "bias"), {out_features}, zeros_init());
}

autograd::Variable Linear::forward(const autograd::Variable& x) const {
  const Shape& s = x.value().shape();
  QKV_CHECK(s.rank() >= 1 && s.back() == in_, ShapeError, "Linear ", name_, ": x ",
            describe(x.value()), " must be [..., ", in_, "]");
  // matmul takes 2-D operands: [..., in] is flattened to rows and the result unflattened.
  const autograd::Variable rows = s.rank() == 2 ? x : autograd::reshape(x, {s.rows(), in_});
  const autograd::Variable y = autograd::linear(rows, weight_, bias_);  // x Wᵀ + b
  return s.rank() == 2 ? y : autograd::reshape(y, s.with_dim(-1, out_));
}

}  // namespace qkv::nn
