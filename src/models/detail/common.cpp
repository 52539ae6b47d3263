#include "detail/common.h"

#include <cstring>

#include "qkv/autograd/functions.h"
#include "qkv/nn/parameters.h"
#include "qkv/ops/softmax.h"

namespace qkv::models::detail {

void check_sequences(std::string_view what, const Tensor& ids, std::span<const int64_t> lengths) {
  QKV_CHECK(ids.defined() && ids.rank() == 2 && ids.dim(0) > 0 && ids.dim(1) > 0, ShapeError, what,
            ": ids ", ids.defined() ? describe(ids) : std::string("undefined"),
            " must be a non-empty [B, T]");
  QKV_CHECK(int64_t(lengths.size()) == ids.dim(0), ShapeError, what, ": ", lengths.size(),
            " lengths for a batch of ", ids.dim(0));
  for (size_t b = 0; b < lengths.size(); ++b)
    QKV_CHECK(lengths[b] >= 1 && lengths[b] <= ids.dim(1), ValueError, what, ": lengths[", b,
              "] = ", lengths[b], " is outside [1, T = ", ids.dim(1), "]");
}

void check_targets(const Tensor& tgt_out, const Tensor& tgt_in) {
  QKV_CHECK(tgt_out.defined() && tgt_out.shape() == tgt_in.shape(), ShapeError,
            "forward_train_loss: tgt_out ",
            tgt_out.defined() ? describe(tgt_out) : std::string("undefined"),
            " is not shaped like tgt_in ", describe(tgt_in));
}

namespace {

void check_indices(std::span<const int64_t> indices, int64_t batch) {
  QKV_CHECK(!indices.empty(), ValueError, "reorder: no rows to keep");
  for (size_t i = 0; i < indices.size(); ++i)
    QKV_CHECK(indices[i] >= 0 && indices[i] < batch, IndexError, "reorder: indices[", i,
              "] = ", indices[i], " is outside the batch [0, ", batch, ")");
}

// Tied: the target table is a second name of the source table, so the decoder's
// Embedding gets the same parameter back from store.add() (one gradient, stored once).
nn::ParameterStore& tie_if(bool tied, nn::ParameterStore& store) {
  if (tied) store.tie("decoder.embeddings.weight", "encoder.embeddings.weight");
  return store;
}

}  // namespace

Tensor gather_rows(const Tensor& x, std::span<const int64_t> indices) {
  check_indices(indices, x.dim(0));
  const Tensor src = x.contiguous();
  const int64_t row = x.dim(0) == 0 ? 0 : x.numel() / x.dim(0);
  const size_t bytes = size_t(row) * dtype_size(x.dtype());
  Tensor out = Tensor::empty(x.shape().with_dim(0, int64_t(indices.size())), x.dtype());
  const auto* from = static_cast<const char*>(src.view().raw_data());
  auto* to = static_cast<char*>(out.view().raw_data());
  for (size_t i = 0; i < indices.size(); ++i)
    std::memcpy(to + i * bytes, from + size_t(indices[i]) * bytes, bytes);
  return out;
}

std::vector<int64_t> gather_rows(const std::vector<int64_t>& x, std::span<const int64_t> indices) {
  check_indices(indices, int64_t(x.size()));
  std::vector<int64_t> out;
  out.reserve(indices.size());
  for (const int64_t i : indices) out.push_back(x[size_t(i)]);
  return out;
}

void check_step_ids(const Tensor& prev_ids, int64_t batch) {
  QKV_CHECK(prev_ids.defined() && prev_ids.rank() == 1 && prev_ids.dim(0) == batch, ShapeError,
            "step: prev_ids ", prev_ids.defined() ? describe(prev_ids) : std::string("undefined"),
            " must be [", batch, "], the state's batch");
}

TokenTables::TokenTables(nn::ParameterStore& store, const ModelConfig& config,
                         bool scale_by_sqrt_dim)
    : source_(store, "encoder.embeddings", config.vocab_size, config.dim_emb,
              {.scale_by_sqrt_dim = scale_by_sqrt_dim}),
      target_(tie_if(config.tied_embeddings, store), "decoder.embeddings", config.vocab_size,
              config.dim_emb, {.scale_by_sqrt_dim = scale_by_sqrt_dim}) {
  if (!config.tied_embeddings)
    output_.emplace(store, "decoder.output", config.dim_emb, config.vocab_size);
}

autograd::Variable TokenTables::project(const autograd::Variable& h) const {
  return output_ ? output_->forward(h) : target_.project(h);
}

autograd::Variable TokenTables::loss(const autograd::Variable& h, const Tensor& targets,
                                     const ops::CrossEntropyOptions& options) const {
  if (output_)
    return autograd::linear_cross_entropy(h, output_->weight(), output_->bias(), targets, options);
  return autograd::linear_cross_entropy(h, target_.weight(), autograd::Variable(), targets,
                                        options);
}

autograd::Variable zeros(const Shape& shape, DType dtype) {
  return autograd::Variable(Tensor::zeros(shape, dtype));
}

Tensor step_log_probs(const autograd::Variable& logits) {
  Tensor scores = logits.value();
  if (!scores.is_contiguous()) return ops::log_softmax(scores);
  ops::log_softmax_in_place(scores);
  return scores;
}

}  // namespace qkv::models::detail
