// The memory training needs, estimated before anything large is allocated, so that a
// model or a batch too large for the machine is a ResourceError naming the flags to
// reduce instead of a process the OOM killer ends (perhaps hours later, at the longest
// batch).
//
// The estimates count the buffers training certainly holds at once: the parameters,
// their gradients and Adam's two moments (16 bytes per parameter), the Transformer's
// position table, and per batch the activations backward keeps (per token and layer,
// see memory.cpp) with the logits and their gradient [B·Tt, V]. The real peak is higher
// (allocator slack, temporaries), so a rejected configuration would certainly not fit;
// one that passes may still fail, and then aligned allocation's own check
// (qkv/base/aligned.h) turns the failing buffer into a ResourceError.
#pragma once

#include <cstdint>

#include "qkv/data/batcher.h"
#include "qkv/models/config.h"

namespace qkv::train {

// The padded dimensions of one training batch, as data::make_batch builds it.
struct BatchShape {
  int64_t sentences = 0;      // B
  int64_t source_length = 0;  // Ts, with the source EOS
  int64_t target_length = 0;  // Tt, with BOS (input) / EOS (labels)
};

struct TrainingMemory {
  double parameters = 0;        // elements of the parameter arena
  double model_bytes = 0;       // parameters, gradients, Adam's moments, position table
  double activation_bytes = 0;  // one batch's activations and the fused loss's buffers
  // Gradient-sized buffers of an update with several micro-batches: the running sum and,
  // on ranks > 0 of the ordered exchange, a copy of each micro-batch but the last.
  double accumulation_bytes = 0;
  double total() const noexcept { return model_bytes + activation_bytes + accumulation_bytes; }
};

// The estimate for `config` (valid: ConfigError otherwise), a batch of `batch` (all
// zeros: the model alone) and `gradient_buffers` extra gradient-sized buffers
// (gradient_buffers_for below). Allocates nothing.
TrainingMemory estimate_training_memory(const models::ModelConfig& config,
                                        const BatchShape& batch = {}, int64_t gradient_buffers = 0);

// The gradient-sized buffers the trainer holds besides the gradient itself for updates of
// `accumulate` micro-batches per rank on `ranks` ranks, on a rank that sums its
// micro-batches as they come (GradientExchange::sums_as_it_goes) or not: none for one
// micro-batch per update, else the sum, plus accumulate - 1 copies where not summed.
int64_t gradient_buffers_for(int64_t accumulate, int ranks, bool sums_as_it_goes);

// The shape of the batch of `indices` in `corpus` under `options` (data::make_batch's
// widths), without building it.
BatchShape batch_shape(const data::TokenizedCorpus& corpus, std::span<const int64_t> indices,
                       const data::BatchOptions& options);

// Of the batches `schedule` (one epoch of BatchIterator::schedule: every epoch cuts the
// same shapes), the one whose estimate for `config` is largest. Arithmetic only: `config`
// is not validated here (an invalid one gives a meaningless shape, never an error);
// check_training_memory, which takes the shape, validates it once.
BatchShape largest_batch(const models::ModelConfig& config, const data::TokenizedCorpus& corpus,
                         const std::vector<std::vector<int64_t>>& schedule,
                         const data::BatchOptions& options);

// FieldResourceError (a ResourceError) when estimate_training_memory(config, batch)
// exceeds memory_limit() (qkv/base/memory.h), naming the fields that shrink it: the
// model's sizes ({dim_emb}, {dim_ffn}, {dim_rnn}, {enc_depth}, {dec_depth}, {vocab_size})
// and, for a batch, {mini_batch_words} and {max_length} (and {accumulate} when its
// buffers count). ConfigError (models::validate) first when `config` is invalid.
void check_training_memory(const models::ModelConfig& config, const BatchShape& batch = {},
                           int64_t gradient_buffers = 0);

}  // namespace qkv::train
