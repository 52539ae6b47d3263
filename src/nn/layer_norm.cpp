#include "qkv/nn/layer_norm.h"

#include <cmath>

#include "qkv/autograd/functions.h"

namespace qkv::nn {

LayerNorm::LayerNorm(ParameterStore& store, const std::string& prefix, int64_t dim, double eps)
    : name_(prefix), dim_(dim), eps_(eps) {
  QKV_CHECK(dim > 0, ConfigError, "LayerNorm ", prefix, ": dim ", dim, " must be positive");
  QKV_CHECK(std::isfinite(eps) && eps > 0, ConfigError, "LayerNorm ", prefix, ": eps ", eps,
            " must be positive and finite");
  weight_ = store.add(child_name(prefix, "weight"), {dim}, ones_init());
  bias_ = store.add(child_name(prefix, "bias"), {dim}, zeros_init());
}

autograd::Variable LayerNorm::forward(const autograd::Variable& x) const {
  const Shape& s = x.value().shape();
  QKV_CHECK(s.rank() >= 1 && s.back() == dim_, ShapeError, "LayerNorm ", name_, ": x ",
            describe(x.value()), " must be [..., ", dim_, "]");
  return autograd::layer_norm(x, weight_, bias_, eps_);
}

}  // namespace qkv::nn
