// Beam search over a batch of sentences, through the Seq2Seq step protocol only
// (encode -> initial_state -> step -> DecoderState::reorder), so it works for every model
// kind. Each sentence has its own beam; all live hypotheses of all sentences form the rows
// of one decoder state, and one step() advances them together.
//
// The scheme is Marian's (marian-dev src/translator/beam_search.cpp): at every step each
// sentence keeps the k best continuations of its live hypotheses by raw cumulative
// log-probability, where k starts at beam_size; a continuation that is EOS finishes and
// shrinks k by one, so a sentence ends once beam_size hypotheses finished (or at its
// length limit, where the live ones are finished as they are). Length normalisation and
// the coverage penalty rank the finished hypotheses only, as in Marian and GNMT: pruning
// by the normalised score would favour whatever happens to be long.
//
// Ties (equal cumulative log-probabilities) go to the earlier hypothesis, then to the
// lower token id, so beam_size 1 makes exactly greedy_decode's choices.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/models/seq2seq.h"

namespace qkv::decode {

struct BeamSearchOptions {
  int64_t beam_size = 5;  // hypotheses kept per sentence, >= 1
  int64_t n_best = 1;     // hypotheses returned per sentence, in [1, beam_size]
  // α >= 0: finished hypotheses are ranked by log_prob / length^α, length counting EOS
  // (Marian's --normalize; 0 ranks by the raw log-probability).
  double normalize = 0.6;
  // β >= 0: adds β · Σ_j log(min(c_j, 1)) to the score, c_j the attention the hypothesis
  // paid to source token j summed over its steps (Wu et al. 2016, "Google's NMT", eq. 14):
  // hypotheses that leave source words unattended are penalised. c_j is floored at 1e-6
  // so that a never-attended token costs β·log(1e-6) rather than -inf. Needs a model
  // with attention.
  double coverage_penalty = 0.0;
  // A sentence's output has at most floor(max_length_factor · Ts) + max_length_extra
  // tokens (EOS not counted; Ts its source length including the source EOS), capped by
  // max_length when > 0 and by the model's max_positions for a Transformer.
  double max_length_factor = 2.0;
  int64_t max_length_extra = 5;
  int64_t max_length = 0;
  // Keep each step's attention row in the hypotheses (alignments, heatmaps).
  bool keep_attention = false;
  models::AttentionSelection attention;  // which attention a Transformer reports
};

struct Hypothesis {
  std::vector<int32_t> tokens;  // [T] output ids, without BOS and EOS
  // [S] log p of each token, then of EOS when finished: S = T + finished.
  std::vector<float> token_log_probs;
  // [S, Ts] row-major when keep_attention and the model attends (else empty): the
  // attention of step s over the sentence's Ts real source tokens (padding left out).
  std::vector<float> attention;
  int64_t source_length = 0;  // Ts: the columns of `attention`
  double log_prob = 0.0;      // Σ token_log_probs (accumulated in double)
  double score = 0.0;         // log_prob / S^α + coverage penalty: what n-best is sorted by
  bool finished = false;      // ended with EOS (false: cut at the length limit)
};

// The length limit of a sentence with `source_length` source tokens under `options`
// for a model with `config` (>= 1).
int64_t max_target_length(const BeamSearchOptions& options, int64_t source_length,
                          const models::ModelConfig& config);

// Throws FieldError naming the option ({beam_size}, {n_best}, ...: field_error.h) when one
// is out of range (beam_size < 1, n_best outside [1, beam_size], negative normalize /
// coverage_penalty / max_length_factor / max_length_extra / max_length, a non-finite
// value).
void validate(const BeamSearchOptions& options);
// validate(), then what `config`'s model can honour: coverage_penalty > 0 needs attention,
// and the attention selection must name one of its decoder layers ({alignment_layer}: -1
// or 0..dec_depth-1; an rnn has one) and heads ({alignment_head}: -1 or 0..heads-1). The
// fields are named as every front end takes them (`--alignment-layer`, the server's
// `alignment_layer`, Python's `alignment_layer=`), so each checks through this one
// function, before it reads any input.
void validate(const BeamSearchOptions& options, const models::ModelConfig& config);

// src [B, Ts] ids (as floats), src_lengths [B] each in [1, Ts] -> per sentence its
// min(n_best, finished) best hypotheses (at least one), best first (by score, then by
// the order they finished). A sentence decodes to the same hypotheses alone as inside a
// batch. The model is used in whatever mode it is in: call set_training(false) first.
// FieldError for bad options (validate(options, model.config())); the model's own errors
// for bad ids or lengths.
std::vector<std::vector<Hypothesis>> beam_search(models::Seq2Seq& model, const Tensor& src,
                                                 std::span<const int64_t> src_lengths,
                                                 const BeamSearchOptions& options);

}  // namespace qkv::decode
