// Greedy decoding: at every step each sentence takes its most probable next token, until
// it produces EOS or reaches the length limit. The cheapest search, used for the BLEU of
// validation during training (beam search will sit beside it).
//
// Runs through the Seq2Seq step protocol only (encode -> initial_state -> step), so it
// works for every model kind. Sentences that finished are dropped from the decoder state
// (DecoderState::select), so a batch costs what its longest output costs, not B times
// that.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/models/seq2seq.h"

namespace qkv::decode {

// src [B, Ts] ids (as floats), src_lengths [B] each in [1, Ts] -> per row the output ids
// without BOS and EOS, at most max_length of them (a row that reaches max_length without
// EOS is cut there). Ties go to the lowest id, so the result is deterministic. The model
// is used in whatever mode it is in: call set_training(false) first, or dropout makes the
// output random and advances the model's dropout counters. ValueError for max_length < 1;
// the model's own errors for bad ids or lengths.
std::vector<std::vector<int32_t>> greedy_decode(models::Seq2Seq& model, const Tensor& src,
                                                std::span<const int64_t> src_lengths,
                                                int64_t max_length);

}  // namespace qkv::decode
