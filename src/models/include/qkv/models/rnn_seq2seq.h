// The rnn encoder-decoder: a bidirectional GRU/LSTM encoder, a Linear + tanh bridge from
// its final states to the decoder's initial state, and a unidirectional GRU/LSTM decoder
// (ModelConfig::attention):
//   none      the decoder sees the source only through its initial state (the
//             fixed-vector bottleneck); readout = Linear(s_t) [E];
//   dot | scaled-dot | cosine | general
//             Luong et al. 2015 global attention from the new state h_t over the
//             encoder outputs projected to H; h̃_t = tanh(W_c [c_t; h_t]) (eq. 5),
//             readout = Linear(h̃_t); optional input feeding (sec. 3.3);
//   additive  Bahdanau et al. 2015: scores from s_{t-1}, the context c_t joins the cell
//             input [y_{t-1}; c_t], readout = tanh(Linear([s_t; c_t; y_{t-1}])) (a
//             simplified deep output, appendix A.2.2, without the maxout).
// logits = readout Eᵀ with the tied table (or a Linear when untied).
#pragma once

#include <memory>

#include "qkv/models/seq2seq.h"

namespace qkv::models {

namespace detail {
class RnnLayers;
}

class RnnSeq2Seq final : public Seq2Seq {
 public:
  // ConfigError unless config.type is rnn (and config validates).
  RnnSeq2Seq(const ModelConfig& config, uint64_t seed, DType dtype = DType::F32);
  ~RnnSeq2Seq() override;

  EncoderOutput encode(const Tensor& src, std::span<const int64_t> src_lengths) override;
  std::unique_ptr<DecoderState> initial_state(const EncoderOutput& encoded) override;
  StepOutput step(const Tensor& prev_ids, DecoderState& state, bool want_attention,
                  const AttentionSelection& which = {}) override;
  autograd::Variable forward_train(const Tensor& src, std::span<const int64_t> src_lengths,
                                   const Tensor& tgt_in,
                                   std::span<const int64_t> tgt_lengths) override;
  autograd::Variable forward_train_loss(const Tensor& src, std::span<const int64_t> src_lengths,
                                        const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                                        const Tensor& tgt_out,
                                        const ops::CrossEntropyOptions& options) override;
  autograd::Variable forward_train_tapped(const Tensor& src, std::span<const int64_t> src_lengths,
                                          const Tensor& tgt_in,
                                          std::span<const int64_t> tgt_lengths,
                                          EncoderTaps& taps) override;

  void set_training(bool training) override;
  bool training() const noexcept override { return training_; }
  nn::ParameterStore& parameters() noexcept override { return store_; }
  const nn::ParameterStore& parameters() const noexcept override { return store_; }
  const ModelConfig& config() const noexcept override { return config_; }

 private:
  // forward_train's decoder readouts [B, Tt, E] before readout dropout and projection.
  autograd::Variable readouts(const Tensor& src, std::span<const int64_t> src_lengths,
                              const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                              EncoderTaps& taps);

  ModelConfig config_;
  nn::ParameterStore store_;
  std::unique_ptr<detail::RnnLayers> layers_;
  bool training_ = true;
};

}  // namespace qkv::models
