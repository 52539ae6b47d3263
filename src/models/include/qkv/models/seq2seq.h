// The one interface behind which the three compared systems sit (RnnSeq2Seq without
// attention, RnnSeq2Seq with Luong or Bahdanau attention, Transformer):
//
//   training:   forward_train(src, src_lengths, tgt_in, tgt_lengths) -> logits, on the
//               autograd tape (teacher forcing; the trainer adds the loss);
//   inference:  encode(src) -> initial_state() -> step(prev ids, state) -> log-probs
//               (+ attention row) -> state.reorder(beam indices) -> step ...
//
// Inference runs without recording (a NoGradGuard inside each call) and exchanges plain
// Tensors. Ids are integers stored as floats (F32 or F64), as data::Batch holds them;
// source and target share one vocabulary. Shapes: B batch, Ts source length, Tt target
// length, D encoder output size, V vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "qkv/autograd/variable.h"
#include "qkv/models/config.h"
#include "qkv/nn/parameters.h"
#include "qkv/ops/cross_entropy.h"

namespace qkv::models {

struct EncoderOutput {
  // [B, Ts, D]: the encoder's outputs (rnn: D = 2·dim_rnn, both directions; transformer:
  // D = dim_emb, after the final LayerNorm). Rows at t >= lengths[b] are padding
  // (zero for the rnn, unused values for the transformer): never attended to.
  Tensor memory;
  std::vector<int64_t> lengths;  // [B] real source tokens per row
  // rnn: the top encoder layer's final states, [B, H] each: h forward, h backward (and
  // for an LSTM c forward, c backward), the input of the decoder's initial-state bridge.
  // Empty for the transformer.
  std::vector<Tensor> final_states;
};

// The source side of one forward_train pass, as Variables on the tape, so that after a
// backward their grad() says how much the loss depends on each source position (`qkv
// gradflow`: does the gradient reach the early words?). forward_train_tapped marks each
// tap retain_grad() (intermediates drop their gradients during backward otherwise,
// autograd/variable.h); a grad() still undefined after the backward means the loss does
// not depend on that Variable (zero).
struct EncoderTaps {
  // [B, Ts, E]: what the encoder reads at each position, before dropout. rnn: the source
  // embeddings; transformer: the embeddings scaled by sqrt(E) plus the positions.
  autograd::Variable input;
  // [B, Ts, D]: the encoder's outputs (EncoderOutput::memory) as the attention reads them.
  // The rnn without attention never reads them: its grad stays undefined.
  autograd::Variable memory;
  // rnn: the top layer's final states (EncoderOutput::final_states: h forward = the
  // forward half of memory at each row's last token, h backward = the backward half at
  // its first token; LSTM: then c forward, c backward) as the decoder's initial-state
  // bridge reads them: its own handles, so their grad() is the bridge's share alone (the
  // attention's share at those positions is in memory's). Empty for the transformer.
  std::vector<autograd::Variable> final_states;

  // retain_grad() on every defined tap.
  void retain_grads() const;
};

// Everything the decoder carries from one step to the next (recurrent states, key/value
// caches, the source rows it attends to), one row per hypothesis.
class DecoderState {
 public:
  virtual ~DecoderState() = default;
  virtual int64_t batch_size() const noexcept = 0;
  // Tokens consumed so far (the position of the next step).
  virtual int64_t steps() const noexcept = 0;
  // Row i of the new state is row indices[i] of the old one; rows may repeat or be left
  // out, so the new batch size is indices.size() (>= 1). Beam search passes each
  // surviving hypothesis's parent; IndexError for an index outside [0, batch_size()).
  virtual void reorder(std::span<const int64_t> indices) = 0;
  // Keeps the listed rows (e.g. the unfinished sentences): reorder under another name.
  void select(std::span<const int64_t> rows) { reorder(rows); }
};

struct StepOutput {
  Tensor log_probs;  // [B, V]: log p(y_t | y_<t, x)
  // [B, Ts] when asked for and the model attends (else undefined): the weights over the
  // source, summing to 1 over the real tokens and 0 on padding.
  Tensor attention;
  // A Transformer, when want_attention and AttentionSelection::every_layer: every decoder
  // layer's cross-attention, all heads, [B, H, Ts] per layer, so one pass can measure
  // every head. Else empty (an rnn's one attention is `attention`).
  std::vector<Tensor> layer_attention;
};

// Which attention a Transformer step reports: the cross-attention of decoder `layer`
// (-1: the last), head `head` (-1: the average over heads). An rnn has one attention:
// only 0 or -1 are valid there.
struct AttentionSelection {
  int64_t layer = -1;
  int64_t head = -1;
  // A Transformer also fills StepOutput::layer_attention. Off by default: search asks
  // for attention at every step (coverage penalty, alignments) and needs one layer.
  bool every_layer = false;
};

class Seq2Seq {
 public:
  virtual ~Seq2Seq() = default;

  // src [B, Ts] ids, src_lengths [B] each in [1, Ts] (ValueError / ShapeError naming the
  // row) -> the encoder's output. Inference only (no tape).
  virtual EncoderOutput encode(const Tensor& src, std::span<const int64_t> src_lengths) = 0;
  // The decoder state before the first step (its batch is the encoder output's).
  virtual std::unique_ptr<DecoderState> initial_state(const EncoderOutput& encoded) = 0;
  // prev_ids [B] (BOS at the first step) -> log-probabilities of the next token [B, V],
  // and the attention row [B, Ts] when want_attention (computed only then: the fused
  // kernels recompute it cheaply for inspection). Advances `state` by one token.
  // ValueError when `state` came from another model kind or its batch differs.
  virtual StepOutput step(const Tensor& prev_ids, DecoderState& state, bool want_attention,
                          const AttentionSelection& which = {}) = 0;

  // Teacher forcing: src [B, Ts], tgt_in [B, Tt] (BOS + y), lengths [B] each in [1, T]
  // -> logits [B, Tt, V] on the tape. Positions t >= tgt_lengths[b] hold values the loss
  // must ignore (cross_entropy with ignore_index = pad_id on tgt_out). Row b at a real
  // position equals what step() gives after feeding tgt_in[b, 0..t].
  virtual autograd::Variable forward_train(const Tensor& src, std::span<const int64_t> src_lengths,
                                           const Tensor& tgt_in,
                                           std::span<const int64_t> tgt_lengths) = 0;

  // The training loss of teacher forcing on the tape: cross_entropy(forward_train(...),
  // tgt_out [B, Tt] (class ids as floats), options), positions holding ignore_index
  // counting for nothing. The default composes the two (the oracle); RnnSeq2Seq and
  // Transformer fuse the output projection into the loss (autograd::linear_cross_entropy)
  // so that the [B·Tt, V] logits and their gradient never exist whole -- the same loss
  // and gradients within float rounding, the same dropout masks.
  virtual autograd::Variable forward_train_loss(const Tensor& src,
                                                std::span<const int64_t> src_lengths,
                                                const Tensor& tgt_in,
                                                std::span<const int64_t> tgt_lengths,
                                                const Tensor& tgt_out,
                                                const ops::CrossEntropyOptions& options);

  // forward_train that also hands out the encoder's Variables (see EncoderTaps); the
  // same logits, the same tape. The default (models without taps, e.g. test doubles)
  // throws ValueError.
  virtual autograd::Variable forward_train_tapped(const Tensor& src,
                                                  std::span<const int64_t> src_lengths,
                                                  const Tensor& tgt_in,
                                                  std::span<const int64_t> tgt_lengths,
                                                  EncoderTaps& taps);

  // Dropout on (training) or off (evaluation, decoding). Models start in training mode.
  virtual void set_training(bool training) = 0;
  virtual bool training() const noexcept = 0;

  // Every Dropout layer's mask counter (see nn::ParameterStore::dropout_counters): saved
  // by checkpoints so a resumed run draws the same masks.
  std::vector<uint64_t> dropout_offsets() const { return parameters().dropout_counters(); }
  // ValueError when the count does not match this model's Dropout layers.
  void set_dropout_offsets(std::span<const uint64_t> offsets) {
    parameters().set_dropout_counters(offsets);
  }
  virtual nn::ParameterStore& parameters() noexcept = 0;
  virtual const nn::ParameterStore& parameters() const noexcept = 0;
  virtual const ModelConfig& config() const noexcept = 0;
};

// The model `config` describes (validated: ConfigError naming the key), with its own
// ParameterStore initialised from `seed`. dtype F64 is for gradient checks.
std::unique_ptr<Seq2Seq> make_model(const ModelConfig& config, uint64_t seed,
                                    DType dtype = DType::F32);

}  // namespace qkv::models
