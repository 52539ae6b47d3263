// Decoding memory estimates (see memory.h for what they count).
#include "qkv/decode/memory.h"

#include <string>

#include "qkv/base/memory.h"

namespace qkv::decode {

double beam_search_bytes(const models::ModelConfig& config, const BeamSearchOptions& options,
                         int64_t sentences, int64_t source_length) {
  const double b = double(sentences), ts = double(source_length);
  const double rows = b * double(options.beam_size);
  const double steps = double(max_target_length(options, source_length, config));
  double floats = 2 * rows * double(config.vocab_size);  // logits, log-probabilities
  if (config.type == models::ModelType::Transformer) {
    floats += 2 * double(config.dec_depth) * rows * (steps + ts) * double(config.dim_emb);
  } else if (config.attention != models::AttentionKind::None) {
    floats += rows * ts * 3 * double(config.dim_rnn);
  }
  if (options.keep_attention) floats += rows * steps * ts;
  return 4 * floats + 24 * rows * steps;
}

void check_beam_search_memory(const models::ModelConfig& config, const BeamSearchOptions& options,
                              int64_t sentences, int64_t source_length, std::string_view remedy) {
  check_memory(beam_search_bytes(config, options, sentences, source_length),
               "beam search of " + std::to_string(sentences) + " sentences (beam size " +
                   std::to_string(options.beam_size) + ", up to " + std::to_string(source_length) +
                   " source and " +
                   std::to_string(max_target_length(options, source_length, config)) +
                   " target tokens, vocabulary " + std::to_string(config.vocab_size) + ")",
               remedy);
}

double force_decode_bytes(const models::ModelConfig& config, int64_t sentences,
                          int64_t source_length, int64_t target_length) {
  const double b = double(sentences), ts = double(source_length), tt = double(target_length);
  const double width = config.type == models::ModelType::Transformer ? double(config.dim_emb)
                                                                     : 2 * double(config.dim_rnn);
  const double layers = double(config.enc_depth + config.dec_depth);
  return 4 * (2 * b * tt * double(config.vocab_size) + b * (ts + tt) * width * layers);
}

}  // namespace qkv::decode
