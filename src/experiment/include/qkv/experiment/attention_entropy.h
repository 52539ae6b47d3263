// How spread out a model's attention is: the entropy of each attention row over the
// real source tokens, averaged over a test set (issue 6's variants table).
//
// A row that puts all its weight on one source token has entropy 0; a uniform row over
// Ts tokens has log Ts, the most there is. Sharp attention (low entropy) is what makes
// heatmaps readable as alignments; attention near uniform is a model that has not learnt
// where to look, or a head that gathers context broadly. The rows are the ones the model
// produces while reading the *reference* translation (teacher forcing), so every variant
// is measured on the same target tokens, not on its own hypotheses.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "qkv/data/vocab.h"
#include "qkv/models/seq2seq.h"

namespace qkv::experiment {

struct AttentionEntropy {
  double mean = 0;      // nats: mean row entropy, over rows and (Transformer) heads
  double uniform = 0;   // nats: mean log Ts over the same rows (a uniform row's entropy)
  int64_t rows = 0;     // rows per head: every reference token and the EOS step
  int64_t heads = 0;    // distributions per row: 1 (rnn), decoder layers x heads (transformer)
  int64_t skipped = 0;  // pairs left out: empty after tokenising, or too long for positions
};

// -sum w log w (natural log, 0 log 0 = 0) in float64. Weights as the model gives them
// (summing to 1 up to rounding; not renormalised).
double row_entropy(std::span<const float> weights);

// The model (put in evaluation mode here) reads each pair's reference with teacher
// forcing, in mini-batches of `mini_batch` sentences of similar source length; for a
// Transformer every decoder layer's every cross-attention head is measured and averaged.
// nullopt for a model that does not attend (rnn:none) or when no pair is usable.
// ValueError when sources and references differ in count; ConfigError for mini_batch < 1.
std::optional<AttentionEntropy> attention_entropy(models::Seq2Seq& model, const data::Vocab& vocab,
                                                  std::span<const std::string> sources,
                                                  std::span<const std::string> references,
                                                  int64_t mini_batch = 32);

}  // namespace qkv::experiment
