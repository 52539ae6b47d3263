// The Transformer (Vaswani et al. 2017) in its pre-LN form: token embeddings scaled by
// sqrt(E) (sec. 3.4) plus sinusoidal positions (sec. 3.5), enc_depth encoder and
// dec_depth decoder layers with LayerNorm before self-attention, cross-attention and the
// feed-forward block and a final LayerNorm per stack, `heads` scaled-dot heads (eq. 1,
// sec. 3.2.2) on the fused kernel, key-padding masks from the source lengths, a causal
// decoder, tied embeddings (source, target, output projection) unless configured
// otherwise.
//
// Incremental decoding: each decoder layer caches the keys and values of the positions
// decoded so far and of the memory, so step t projects one position and attends over t
// cached ones: O(t) work, not a rerun of the prefix.
#pragma once

#include <memory>

#include "qkv/attention/multi_head.h"
#include "qkv/models/seq2seq.h"

namespace qkv::models {

namespace detail {
class TransformerLayers;
class CachePool;
}  // namespace detail

class Transformer final : public Seq2Seq {
 public:
  // ConfigError unless config.type is transformer (and config validates).
  Transformer(const ModelConfig& config, uint64_t seed, DType dtype = DType::F32);
  ~Transformer() override;

  EncoderOutput encode(const Tensor& src, std::span<const int64_t> src_lengths) override;
  std::unique_ptr<DecoderState> initial_state(const EncoderOutput& encoded) override;
  // which: the cross-attention of decoder layer `which.layer` (-1: last), head
  // `which.head` (-1: averaged over heads); ConfigError outside those ranges.
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

  // Sets of decoder caches that finished decoder states gave back, kept for the next
  // initial_state (0 or 1): decoding batch after batch reuses their buffers.
  int64_t spare_decoder_caches() const;

 private:
  // forward_train's decoder output before the output projection, at the real target
  // positions only: hidden [Nt, E], the rows target_rows packs of [B, Tt].
  struct DecoderOutput {
    autograd::Variable hidden;
    attention::PackedBatch target_rows;
  };
  // taps: when non-null, receives the encoder's input and memory [B, Ts, E] (the decoder
  // then reads memory through that padded Variable, so the tap's gradient is complete).
  DecoderOutput decoder_output(const Tensor& src, std::span<const int64_t> src_lengths,
                               const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                               EncoderTaps* taps);

  ModelConfig config_;
  nn::ParameterStore store_;
  std::unique_ptr<detail::TransformerLayers> layers_;
  // Decoder caches of finished decoder states, reused by later ones (transformer.cpp).
  std::shared_ptr<detail::CachePool> cache_pool_;
  bool training_ = true;
};

}  // namespace qkv::models
