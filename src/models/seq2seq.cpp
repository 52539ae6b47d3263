#include "qkv/models/seq2seq.h"

#include "detail/common.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/error.h"
#include "qkv/models/rnn_seq2seq.h"
#include "qkv/models/transformer.h"

namespace qkv::models {

void EncoderTaps::retain_grads() const {
  for (const autograd::Variable* v : {&input, &memory})
    if (v->defined()) v->retain_grad();
  for (const autograd::Variable& v : final_states) v.retain_grad();
}

autograd::Variable Seq2Seq::forward_train_loss(const Tensor& src,
                                               std::span<const int64_t> src_lengths,
                                               const Tensor& tgt_in,
                                               std::span<const int64_t> tgt_lengths,
                                               const Tensor& tgt_out,
                                               const ops::CrossEntropyOptions& options) {
  detail::check_targets(tgt_out, tgt_in);
  return autograd::cross_entropy(forward_train(src, src_lengths, tgt_in, tgt_lengths), tgt_out,
                                 options);
}

autograd::Variable Seq2Seq::forward_train_tapped(const Tensor&, std::span<const int64_t>,
                                                 const Tensor&, std::span<const int64_t>,
                                                 EncoderTaps&) {
  QKV_THROW(ValueError,
            "forward_train_tapped: this model does not expose its encoder (only "
            "RnnSeq2Seq and Transformer do)");
}

std::unique_ptr<Seq2Seq> make_model(const ModelConfig& config, uint64_t seed, DType dtype) {
  // RnnSeq2Seq's and Transformer's constructors validate `config`: once, not here again.
  if (config.type == ModelType::Rnn) return std::make_unique<RnnSeq2Seq>(config, seed, dtype);
  return std::make_unique<Transformer>(config, seed, dtype);
}

}  // namespace qkv::models
