// Training memory estimates (see memory.h for what they count and why a lower estimate).
#include "qkv/train/memory.h"

#include <algorithm>
#include <string>

#include "qkv/base/error.h"
#include "qkv/base/memory.h"
#include "qkv/models/footprint.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/ops/linear_cross_entropy.h"

namespace qkv::train {
namespace {

// Floats per token that backward certainly keeps, per layer (dropout masks, attention
// log-sum-exps and every temporary left out):
//   transformer encoder layer: LayerNorm out, Q, K, V, attention out, out projection,
//     residual, LayerNorm, FFN out, residual: 10E; the FFN hidden layer and its
//     activation: 2F;
//   transformer decoder layer per target token: self-attention block 7E,
//     cross-attention block (LayerNorm, Q, attention out, projection, residual) 5E, FFN
//     block 3E + 2F; per source token the cross-attention's K and V: 2E;
//   embeddings (with positions): E per token on each side.
double transformer_activations(const models::ModelConfig& c, double src, double tgt) {
  const double e = double(c.dim_emb), f = double(c.dim_ffn);
  const double encoder = src * double(c.enc_depth) * (10 * e + 2 * f);
  const double decoder = double(c.dec_depth) * (tgt * (15 * e + 2 * f) + src * 2 * e);
  return encoder + decoder + (src + tgt) * e;
}

// rnn layers per token: the gate pre-activations g·H and the state H (and the cell H for
// an LSTM), per direction; the decoder's attention per target token: its weights over
// the Ts source tokens and the context 2H; the readout E; embeddings E on each side.
double rnn_activations(const models::ModelConfig& c, double src, double tgt, double ts) {
  const double h = double(c.dim_rnn), e = double(c.dim_emb);
  const double per_cell = (c.cell == models::CellType::Gru ? 3 : 4) * h + h +
                          (c.cell == models::CellType::Lstm ? h : 0);
  const double encoder = src * double(c.enc_depth) * 2 * per_cell;
  double decoder = tgt * (double(c.dec_depth) * per_cell + e);
  if (c.attention != models::AttentionKind::None) decoder += tgt * (ts + 2 * h);
  return encoder + decoder + (src + tgt) * e;
}

// The attention probabilities each of the Transformer's attention calls keeps for
// backward (ops::flash_attention within autograd's ops::kFlashKeepProbsBytes per call):
// encoder self-attention over the source, decoder self-attention over the target and
// cross-attention from the target to the source, per layer.
double kept_attention_bytes(const models::ModelConfig& c, const BatchShape& b) {
  const int64_t bh = b.sentences * c.heads, s = b.source_length, t = b.target_length;
  auto kept = [&](int64_t tq, int64_t tk) {
    return double(ops::flash_attention_kept_bytes(bh, tq, tk, ops::kFlashKeepProbsBytes));
  };
  return double(c.enc_depth) * kept(s, s) + double(c.dec_depth) * (kept(t, t) + kept(t, s));
}

std::string describe(const BatchShape& b) {
  return std::to_string(b.sentences) + " sentences of up to " + std::to_string(b.source_length) +
         " source and " + std::to_string(b.target_length) + " target tokens";
}

// The remedies mark the fields to reduce (ModelConfig's, TrainSettings'), for each front
// end to name (check_memory throws a FieldResourceError).
constexpr const char* kModelFields =
    "{dim_emb}, {dim_ffn}, {dim_rnn}, {enc_depth}, {dec_depth} or {vocab_size}";

// The bytes of one batch's activations and the fused loss's buffers (the config valid).
double activation_bytes(const models::ModelConfig& config, const BatchShape& batch) {
  const double b = double(batch.sentences);
  const double src = b * double(batch.source_length), tgt = b * double(batch.target_length);
  const double per_batch = config.type == models::ModelType::Transformer
                               ? transformer_activations(config, src, tgt)
                               : rnn_activations(config, src, tgt, double(batch.source_length));
  // The fused output projection + loss (ops/linear_cross_entropy.h): never the whole
  // logits [B·Tt, V], but one chunk buffer [chunk, V] (the logits, then their gradient
  // over them), and the gradients it forms in forward, dhidden [B·Tt, E] and dW [V, E].
  const double vocab = double(config.vocab_size), dim = double(config.dim_emb);
  const double chunk =
      std::min(tgt, double(ops::linear_cross_entropy_chunk_rows(config.vocab_size)));
  const double loss_buffers = tgt > 0 ? chunk * vocab + tgt * dim + vocab * dim : 0.0;
  const double kept =
      config.type == models::ModelType::Transformer ? kept_attention_bytes(config, batch) : 0.0;
  return 4 * (per_batch + loss_buffers) + kept;
}

}  // namespace

int64_t gradient_buffers_for(int64_t accumulate, int ranks, bool sums_as_it_goes) {
  if (accumulate * int64_t(ranks) <= 1) return 0;  // the classic trainer: no sum
  return 1 + (sums_as_it_goes ? 0 : accumulate - 1);
}

TrainingMemory estimate_training_memory(const models::ModelConfig& config, const BatchShape& batch,
                                        int64_t gradient_buffers) {
  const models::ModelFootprint f = models::footprint(config);
  TrainingMemory m;
  m.parameters = f.parameters;
  // Values, gradients, Adam's m and v: 4 floats per parameter; the position table is
  // computed in float64 and kept in float32.
  m.model_bytes = 16 * f.parameters + 12 * f.position_table;
  m.accumulation_bytes = 4 * f.parameters * double(gradient_buffers);
  m.activation_bytes = activation_bytes(config, batch);
  return m;
}

BatchShape batch_shape(const data::TokenizedCorpus& corpus, std::span<const int64_t> indices,
                       const data::BatchOptions& options) {
  BatchShape s{int64_t(indices.size()), 0, 0};
  for (const int64_t i : indices) {
    QKV_CHECK(i >= 0 && size_t(i) < corpus.source.size(), IndexError, "batch_shape: index ", i,
              " outside the corpus [0, ", corpus.source.size(), ")");
    s.source_length = std::max(
        s.source_length, int64_t(corpus.source[size_t(i)].size()) + (options.source_eos ? 1 : 0));
    if (size_t(i) < corpus.target.size())
      s.target_length = std::max(s.target_length, int64_t(corpus.target[size_t(i)].size()) + 1);
  }
  return s;
}

BatchShape largest_batch(const models::ModelConfig& config, const data::TokenizedCorpus& corpus,
                         const std::vector<std::vector<int64_t>>& schedule,
                         const data::BatchOptions& options) {
  BatchShape largest;
  double most = -1;
  for (const std::vector<int64_t>& indices : schedule) {
    const BatchShape s = batch_shape(corpus, indices, options);
    const double bytes = activation_bytes(config, s);
    if (bytes > most) {
      most = bytes;
      largest = s;
    }
  }
  return largest;
}

void check_training_memory(const models::ModelConfig& config, const BatchShape& batch,
                           int64_t gradient_buffers) {
  const TrainingMemory m = estimate_training_memory(config, batch, gradient_buffers);
  const std::string parameters = std::to_string(int64_t(std::min(m.parameters, 9e18)));
  if (gradient_buffers > 0 && m.model_bytes + m.activation_bytes <= memory_limit().bytes) {
    check_memory(m.total(),
                 "training with " + std::to_string(gradient_buffers) +
                     " gradient-sized buffer(s) for the update's micro-batches (" +
                     format_bytes(m.accumulation_bytes) + " with " + parameters +
                     " parameters) besides the model and the largest batch (" +
                     format_bytes(m.model_bytes + m.activation_bytes) + ")",
                 "lower {accumulate} (each micro-batch but the last is kept whole on ranks > 0) "
                 "or reduce the model: " +
                     std::string(kModelFields));
    return;
  }
  if (batch.sentences == 0) {
    check_memory(m.total(),
                 "training this model (" + parameters +
                     " parameters, with their gradients and Adam's two moments)",
                 std::string("reduce the model: ") + kModelFields);
    return;
  }
  check_memory(m.total(),
               "training on the largest batch (" + describe(batch) + ", vocabulary " +
                   std::to_string(config.vocab_size) + ": about " +
                   format_bytes(m.activation_bytes) +
                   " of activations and the loss's buffers) with " + parameters + " parameters (" +
                   format_bytes(m.model_bytes) + " with their gradients and Adam's moments)",
               std::string("reduce {mini_batch_words} (fewer sentences per batch) or {max_length} "
                           "(shorter ones), or the model: ") +
                   kModelFields);
}

}  // namespace qkv::train
