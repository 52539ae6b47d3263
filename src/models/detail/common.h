// Helpers every model uses: input checks, row gathers for DecoderState::reorder, and the
// output layer shared by the rnn and the transformer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "qkv/models/seq2seq.h"
#include "qkv/nn/embedding.h"
#include "qkv/nn/linear.h"

namespace qkv::models::detail {

// ids [B, T] with lengths [B], each in [1, T]: ShapeError / ValueError naming `what`
// ("src", "tgt_in") and the row.
void check_sequences(std::string_view what, const Tensor& ids, std::span<const int64_t> lengths);
// tgt_out shaped like tgt_in (the labels of its positions), else ShapeError naming both:
// every forward_train_loss checks before it reads the targets.
void check_targets(const Tensor& tgt_out, const Tensor& tgt_in);

// x [B, ...] -> [indices.size(), ...] with row i = x[indices[i]] (a contiguous copy).
// IndexError naming the index when one is outside [0, B); ValueError when empty.
Tensor gather_rows(const Tensor& x, std::span<const int64_t> indices);
// The same for a per-row vector.
std::vector<int64_t> gather_rows(const std::vector<int64_t>& x, std::span<const int64_t> indices);

// prev_ids [B] for a state of batch `batch`: ShapeError otherwise.
void check_step_ids(const Tensor& prev_ids, int64_t batch);

// The model's token tables: the source and target embeddings, and the output projection
// (tied: one table for all three, Press & Wolf 2017; else two tables and a Linear).
class TokenTables {
 public:
  TokenTables(nn::ParameterStore& store, const ModelConfig& config, bool scale_by_sqrt_dim);

  // ids [...] -> [..., E]
  autograd::Variable source(const Tensor& ids) const { return source_.forward(ids); }
  autograd::Variable target(const Tensor& ids) const { return target_.forward(ids); }
  // h [..., E] -> logits [..., V]
  autograd::Variable project(const autograd::Variable& h) const;
  // h [..., E], targets [...] -> [] cross_entropy(project(h), targets, options), fused
  // (autograd::linear_cross_entropy): the logits never exist whole.
  autograd::Variable loss(const autograd::Variable& h, const Tensor& targets,
                          const ops::CrossEntropyOptions& options) const;

 private:
  nn::Embedding source_;
  nn::Embedding target_;              // tied: the same parameter as source_
  std::optional<nn::Linear> output_;  // untied only
};

// The dtype-matching constant zeros [shape].
autograd::Variable zeros(const Shape& shape, DType dtype);

// A decoding step's log-probabilities from its logits [B, V], written over the logits
// when they are contiguous (they are the step's own product, read by nothing else): a
// second [B, V] buffer written every step cost beam search ~1 % of its time.
Tensor step_log_probs(const autograd::Variable& logits);

}  // namespace qkv::models::detail
