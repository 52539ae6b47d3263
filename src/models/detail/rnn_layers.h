// The layers of the rnn encoder-decoder and the decoder's one-step function, shared by
// teacher-forced training (forward_train loops over it when the recurrence needs the
// attention output) and decoding (step).
//
// Notation: E = dim_emb, H = dim_rnn, L = dec_depth, A = H (additive hidden size).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "detail/common.h"
#include "qkv/attention/attention.h"
#include "qkv/nn/dropout.h"
#include "qkv/nn/recurrent.h"

namespace qkv::models::detail {

using autograd::Variable;

// The decoder's recurrent state: one [B, H] per layer (c only for an LSTM), and h̃_{t-1}
// [B, H] with input feeding (undefined otherwise).
struct RnnDecoderVars {
  std::vector<Variable> h, c;
  Variable feed;
};

// What the decoder attends to, prepared once per source batch.
struct RnnMemory {
  // Luong: the encoder outputs projected to H, [B, Ts, H]. Bahdanau: U·k, the key side of
  // the additive score, [B, Ts, A] (computed once instead of at every step).
  Variable keys;
  // Luong: = keys. Bahdanau: the encoder outputs [B, Ts, 2H] (the annotations h_j).
  Variable values;
  std::span<const int64_t> lengths;  // [B]
};

struct RnnStepResult {
  RnnDecoderVars next;
  Variable readout;  // [B, E], before the readout dropout and the output projection
  Variable weights;  // [B, 1, Ts] when asked for and the model attends
};

struct RnnEncoded {
  Variable memory;                     // [B, Ts, 2H]
  std::vector<Variable> final_states;  // h fwd, h bwd (, c fwd, c bwd), [B, H] each
  Variable input;                      // [B, Ts, E] the source embeddings, before dropout
};

class RnnLayers {
 public:
  RnnLayers(nn::ParameterStore& store, const ModelConfig& config);

  // src [B, Ts] -> the bidirectional encoder's outputs and final states.
  RnnEncoded encode(const Tensor& src, std::span<const int64_t> lengths);
  // The decoder's initial state from the encoder's final states: h_0 = tanh(W_h [→h; ←h] +
  // b) split into L layers (c_0 = W_c [→c; ←c] + b for an LSTM; h̃_0 = 0 with input
  // feeding). The only path from the source to a decoder without attention.
  RnnDecoderVars bridge(std::span<const Variable> final_states) const;
  // memory [B, Ts, 2H] -> keys/values (undefined for attention none).
  RnnMemory prepare_memory(const Variable& memory, std::span<const int64_t> lengths) const;

  // y [B, E] (the embedded previous token) -> the next state and the readout.
  RnnStepResult step(const Variable& y, const RnnDecoderVars& state, const RnnMemory& memory,
                     bool want_weights);
  // Teacher forcing over the whole target: tgt_in [B, Tt] -> readouts [B, Tt, E].
  Variable decode_sequence(const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                           const RnnDecoderVars& initial, const RnnMemory& memory);

  // readout [..., E] -> logits [..., V] (readout dropout, then the output projection).
  Variable logits(const Variable& readout);
  // readout [B, Tt, E], tgt_out [B, Tt] -> [] cross_entropy(logits(readout), tgt_out),
  // fused (TokenTables::loss); the same readout dropout.
  Variable loss(const Variable& readout, const Tensor& tgt_out,
                const ops::CrossEntropyOptions& options);
  Variable embed_target(const Tensor& ids) { return target_dropout_.forward(tables_.target(ids)); }

  void set_training(bool training);
  const ModelConfig& config() const noexcept { return config_; }

 private:
  bool luong() const noexcept;
  // Luong et al. 2015, eqs. 5 and 7-8: h̃ = tanh(W_c [c_t; h_t]), c_t = Σ_s a_t(s) h̄_s.
  // h [B, Tq, H] -> (h̃ [B, Tq, H], weights [B, Tq, Ts] if asked).
  std::pair<Variable, Variable> luong_attend(const Variable& h, const RnnMemory& memory,
                                             bool want_weights) const;
  // Bahdanau et al. 2015, appendix A.1.2: e_j = vᵀ tanh(W s_{t-1} + U h_j + b),
  // a = softmax(e) over the real tokens, c_t = Σ_j a_j h_j. s [B, H] -> (c [B, 2H],
  // a [B, 1, Ts]).
  std::pair<Variable, Variable> additive_attend(const Variable& s, const RnnMemory& memory) const;
  // One Bahdanau step split in two, so that teacher forcing can run the readout once over
  // all steps: the recurrence (attend from s_{t-1}, then the cell on [y; c]), and the
  // readout tanh(W [s_t; c_t; y_{t-1}] + b), which works on [B, X] and on [B, Tt, X] alike.
  struct AdditiveStep {
    nn::RecurrentState next;
    Variable context;  // [B, 2H]
    Variable weights;  // [B, 1, Ts]
  };
  AdditiveStep additive_recur(const Variable& y, const RnnDecoderVars& state,
                              const RnnMemory& memory);
  Variable additive_readout(const Variable& s, const Variable& context, const Variable& y);

  ModelConfig config_;
  TokenTables tables_;
  nn::Dropout source_dropout_, target_dropout_, readout_dropout_;
  nn::Recurrent encoder_, decoder_;
  nn::Linear bridge_h_;
  std::optional<nn::Linear> bridge_c_;     // LSTM
  std::optional<nn::Linear> memory_proj_;  // Luong: 2H -> H
  std::optional<nn::Linear> combine_;      // Luong: W_c, 2H -> H
  attention::ScoreParams score_;           // General: w [H, H]; additive: w, u, b, v
  nn::Linear readout_;                     // H -> E (additive: H + 2H + E -> E)
};

}  // namespace qkv::models::detail
