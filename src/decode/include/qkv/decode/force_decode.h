// Forced decoding: the model's log-probability of a given translation (teacher forcing),
// token by token. It scores references (`qkv score`), and checks search: a hypothesis's
// score must equal the forced score of its tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/models/seq2seq.h"

namespace qkv::decode {

// src [B, Ts] ids (as floats), src_lengths [B] each in [1, Ts], targets [B] token ids
// without BOS/EOS (may be empty) -> per row [T_b + 1]: log p(y_t | y_<t, x) for each
// target token, then log p(EOS | y, x). One forward_train pass (no tape), so rows are
// scored together. The model is used in whatever mode it is in (set_training(false)
// first). ShapeError when targets.size() != B; IndexError naming the row and position for
// an id outside [0, vocab_size); the model's own errors (a Transformer target longer than
// max_positions - 1).
std::vector<std::vector<float>> force_decode(models::Seq2Seq& model, const Tensor& src,
                                             std::span<const int64_t> src_lengths,
                                             std::span<const std::vector<int32_t>> targets);

// The attention rows the model produces while reading `targets` (teacher forcing through
// step()), for a layer/head other than the one the search kept: per row [T_b + 1, Ts_b]
// row-major (one row per target token, then the EOS step; Ts_b = src_lengths[b], padding
// left out). Empty rows for a model that does not attend. Errors as force_decode, and the
// model's for a bad `which`.
std::vector<std::vector<float>> forced_attention(models::Seq2Seq& model, const Tensor& src,
                                                 std::span<const int64_t> src_lengths,
                                                 std::span<const std::vector<int32_t>> targets,
                                                 const models::AttentionSelection& which);

// Every attention distribution in one teacher-forced pass: for a Transformer each decoder
// layer's each cross-attention head (layer-major: distribution d = layer * heads + head),
// for an attending rnn its one attention. rows[b] holds `distributions` blocks of
// [T_b + 1, Ts_b] row-major, block d equal to what forced_attention gives for
// {layer, head}. distributions = 0 and empty rows for a model that does not attend.
struct AllForcedAttention {
  int64_t distributions = 0;
  std::vector<std::vector<float>> rows;
};
AllForcedAttention forced_attention_all(models::Seq2Seq& model, const Tensor& src,
                                        std::span<const int64_t> src_lengths,
                                        std::span<const std::vector<int32_t>> targets);

}  // namespace qkv::decode
