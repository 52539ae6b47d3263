#include "detail/multi_head.h"

namespace qkv::models::detail {

attention::MultiHeadAttention make_multi_head(nn::ParameterStore& store, const std::string& prefix,
                                              int64_t dim, int64_t heads) {
  QKV_CHECK(dim > 0, ConfigError, "attention ", prefix, ": size ", dim, " must be positive");
  // Registration order: the q, k, v weights back to back, then their biases, then the
  // output projection, so that [wq; wk; wv] [3E, E] and [bq; bk; bv] [3E] are views of
  // the arena and self-attention's projections run as one GEMM without a copy
  // (autograd::stacked_linear). Names and initial values (a function of the name only,
  // see nn/parameters.h) are nn::Linear's, and model files are read by name, so files
  // written before this order still load.
  auto weight = [&](const char* proj) {
    return store.add(nn::child_name(nn::child_name(prefix, proj), "weight"), {dim, dim},
                     nn::xavier_uniform_init());
  };
  auto bias = [&](const char* proj) {
    return store.add(nn::child_name(nn::child_name(prefix, proj), "bias"), {dim}, nn::zeros_init());
  };
  attention::MultiHeadParams p;
  p.wq = weight("q_proj"), p.wk = weight("k_proj"), p.wv = weight("v_proj");
  p.bq = bias("q_proj"), p.bk = bias("k_proj"), p.bv = bias("v_proj");
  p.wo = weight("out_proj"), p.bo = bias("out_proj");
  // The Variables share the store's nodes, so later arena growth rebinds them here too.
  return attention::MultiHeadAttention(std::move(p), heads);
}

}  // namespace qkv::models::detail
