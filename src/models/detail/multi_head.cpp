#include "detail/multi_head.h"

#include "qkv/nn/linear.h"

namespace qkv::models::detail {

attention::MultiHeadAttention make_multi_head(nn::ParameterStore& store, const std::string& prefix,
                                              int64_t dim, int64_t heads) {
  // Registration order q, k, v, out: the order of the tensors in model.safetensors.
  const nn::Linear q(store, nn::child_name(prefix, "q_proj"), dim, dim);
  const nn::Linear k(store, nn::child_name(prefix, "k_proj"), dim, dim);
  const nn::Linear v(store, nn::child_name(prefix, "v_proj"), dim, dim);
  const nn::Linear out(store, nn::child_name(prefix, "out_proj"), dim, dim);
  // The Variables share the store's nodes, so later arena growth rebinds them here too.
  return attention::MultiHeadAttention(
      {q.weight(), k.weight(), v.weight(), out.weight(), q.bias(), k.bias(), v.bias(), out.bias()},
      heads);
}

}  // namespace qkv::models::detail
