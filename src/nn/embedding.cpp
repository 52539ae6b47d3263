#include "qkv/nn/embedding.h"

#include <cmath>

#include "qkv/autograd/functions.h"

namespace qkv::nn {

Embedding::Embedding(ParameterStore& store, const std::string& prefix, int64_t vocab, int64_t dim,
                     const EmbeddingOptions& options)
    : name_(prefix), vocab_(vocab), dim_(dim), options_(options) {
  QKV_CHECK(vocab > 0 && dim > 0, ConfigError, "Embedding ", prefix, ": vocab ", vocab, " and dim ",
            dim, " must be positive");
  weight_ = store.add(child_name(prefix, "weight"), {vocab, dim},
                      normal_init(1.0 / std::sqrt(double(dim))));
}

autograd::Variable Embedding::forward(const Tensor& ids) const {
  const autograd::Variable rows = autograd::embedding(weight_, ids);
  return options_.scale_by_sqrt_dim ? autograd::scale(rows, std::sqrt(double(dim_))) : rows;
}

autograd::Variable Embedding::project(const autograd::Variable& h) const {
  const Shape& s = h.value().shape();
  QKV_CHECK(s.rank() >= 1 && s.back() == dim_, ShapeError, "Embedding ", name_, ": projected h ",
            describe(h.value()), " must be [..., ", dim_, "]");
  const autograd::Variable rows = s.rank() == 2 ? h : autograd::reshape(h, {s.rows(), dim_});
  const autograd::Variable logits = autograd::matmul(rows, weight_, {.transpose_b = true});  // h Eᵀ
  return s.rank() == 2 ? logits : autograd::reshape(logits, s.with_dim(-1, vocab_));
}

}  // namespace qkv::nn
