#include "qkv/models/seq2seq.h"

#include "qkv/models/rnn_seq2seq.h"
#include "qkv/models/transformer.h"

namespace qkv::models {

std::unique_ptr<Seq2Seq> make_model(const ModelConfig& config, uint64_t seed, DType dtype) {
  validate(config);
  if (config.type == ModelType::Rnn) return std::make_unique<RnnSeq2Seq>(config, seed, dtype);
  return std::make_unique<Transformer>(config, seed, dtype);
}

}  // namespace qkv::models
