// Helpers for the models tests: tiny configurations of every variant, padded batches,
// and teacher-forced stepping.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "qkv/models/seq2seq.h"

namespace qkv::models::testing {

inline constexpr int64_t kVocab = 11;  // ids 0 pad, 1 unk, 2 bos, 3 eos, 4..10 words

// A tiny rnn / transformer (sizes chosen so every dimension differs: bugs show as shape
// errors rather than silent broadcasts).
ModelConfig tiny_rnn(AttentionKind attention, CellType cell, bool input_feeding = false);
ModelConfig tiny_transformer();

// Every variant the project compares, with a readable name for test parameters.
struct Variant {
  std::string name;
  ModelConfig config;
};
std::vector<Variant> all_variants();
// gtest prints a parameter by name instead of its bytes.
inline void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

struct Batch {
  Tensor src;      // [B, Ts]
  Tensor tgt_in;   // [B, Tt]: BOS + y, then pad
  Tensor tgt_out;  // [B, Tt]: y + EOS, then pad
  std::vector<int64_t> src_lengths, tgt_lengths;
};
// Pads the rows with pad id 0: src rows as given, tgt_in = BOS + y, tgt_out = y + EOS.
Batch make_batch(const std::vector<std::vector<int64_t>>& src,
                 const std::vector<std::vector<int64_t>>& tgt);
// Row b of `batch` alone (unpadded).
Batch row_of(const Batch& batch, int64_t b);
// Three sentence pairs of different lengths.
Batch sample_batch();

// logits [B, T, V] -> log-softmax [B, T, V].
Tensor log_softmax_of(const Tensor& logits);

struct Stepped {
  std::vector<Tensor> log_probs;  // Tt entries of [B, V]
  std::vector<Tensor> attention;  // Tt entries of [B, Ts] (undefined without attention)
};
// encode -> initial_state -> step with tgt_in's column t for every t.
Stepped step_through(Seq2Seq& model, const Batch& batch, bool want_attention,
                     const AttentionSelection& which = {});

// Row `b` of x [B, ...] as an [1, ...] copy.
Tensor row(const Tensor& x, int64_t b);

}  // namespace qkv::models::testing
