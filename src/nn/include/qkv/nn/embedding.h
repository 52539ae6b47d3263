// Token embedding: rows of a table [V, E], optionally scaled by sqrt(E) (Vaswani et al.
// 2017, sec. 3.4), and the tied output projection logits = h Eᵀ (Press & Wolf 2017)
// that shares the table with the input side.
#pragma once

#include <cstdint>
#include <string>

#include "qkv/nn/parameters.h"

namespace qkv::nn {

struct EmbeddingOptions {
  bool scale_by_sqrt_dim = false;  // forward() returns sqrt(E) · table[ids]
};

class Embedding {
 public:
  // Registers prefix.weight [vocab, dim] ~ N(0, 1/dim) (with the sqrt(dim) scale, rows
  // then have unit variance). ConfigError for non-positive sizes.
  Embedding(ParameterStore& store, const std::string& prefix, int64_t vocab, int64_t dim,
            const EmbeddingOptions& options = {});

  // ids [...] (integers in [0, vocab) stored as floats; IndexError / ValueError otherwise)
  //   -> [..., dim].
  autograd::Variable forward(const Tensor& ids) const;
  // h [..., dim] -> logits [..., vocab] = h Eᵀ, the output projection tied to this table:
  // its gradient adds to the same parameter as forward()'s.
  autograd::Variable project(const autograd::Variable& h) const;

  const autograd::Variable& weight() const noexcept { return weight_; }
  int64_t vocab() const noexcept { return vocab_; }
  int64_t dim() const noexcept { return dim_; }

 private:
  std::string name_;
  int64_t vocab_, dim_;
  EmbeddingOptions options_;
  autograd::Variable weight_;
};

}  // namespace qkv::nn
