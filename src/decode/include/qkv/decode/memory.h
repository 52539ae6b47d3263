// The memory decoding needs, estimated before a batch is decoded, so that a beam too
// wide or a batch too large for the machine is a ResourceError naming what to reduce
// rather than a process the OOM killer ends mid-output.
//
// Lower estimates of the buffers that certainly exist at once (the real peak is higher),
// so a refused batch would certainly not fit:
//   beam search, R = sentences × beam_size rows, L = max_target_length():
//     the step's logits and log-probabilities [R, V]; the decoder state of every row
//     (Transformer: the self-attention keys and values of L steps and the
//     cross-attention keys and values of Ts source tokens, per decoder layer; rnn: the
//     attention memory [Ts, 3H]); with keep_attention the attention rows of every
//     search-tree node [L·beam, Ts] per sentence; the tree's nodes (24 bytes each).
//   forced decoding: the logits and log-probabilities [B, Tt, V] and one activation row
//     per token and layer.
#pragma once

#include <cstdint>
#include <string_view>

#include "qkv/decode/beam_search.h"

namespace qkv::decode {

inline constexpr std::string_view kReduceSearch =
    "reduce the beam size, the number of sentences decoded together or the length limit";

// Bytes beam_search needs for `sentences` sentences of up to `source_length` tokens
// (with the source EOS) under `options`, with a model of `config`.
double beam_search_bytes(const models::ModelConfig& config, const BeamSearchOptions& options,
                         int64_t sentences, int64_t source_length);

// ResourceError "beam search of N sentences (beam K, up to L target tokens) needs about
// X, more than the Y qkv may use (...); <remedy>" when beam_search_bytes exceeds
// memory_limit() (qkv/base/memory.h). beam_search() checks with kReduceSearch; the tools
// check first with their flag names.
void check_beam_search_memory(const models::ModelConfig& config, const BeamSearchOptions& options,
                              int64_t sentences, int64_t source_length,
                              std::string_view remedy = kReduceSearch);

// Bytes force_decode needs for `sentences` pairs of up to `source_length` source and
// `target_length` target tokens (each with its EOS/BOS).
double force_decode_bytes(const models::ModelConfig& config, int64_t sentences,
                          int64_t source_length, int64_t target_length);

}  // namespace qkv::decode
