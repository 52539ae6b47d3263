// Gradient flow to the source words (the seed documents' claim that attention eases the
// gradient's path like a skip connection; Bahdanau et al. 2015, sec. 1): for each source
// position j, the norm of the loss gradient with respect to that position's encoder
// state, averaged over sentences. Without attention the gradient for an early word has
// to cross the whole recurrence; with attention every h_j sits one step from the loss.
//
// Two places to take the gradient at (GradientSite):
//   input   x_j, what the encoder reads at position j (the source embedding; for the
//           Transformer plus the position). Every path from word j to the loss starts
//           there, recurrence included: the measure that compares all three systems.
//   output  h_j, the encoder's output as the decoder reads it: through the attention
//           (EncoderOutput::memory) and, for the rnn, through the bridge (the forward
//           half of h at the last token, the backward half at the first). The paths
//           inside the encoder are not counted, so for the rnn without attention it is
//           zero except at the first and last positions. (LSTM: the final cell states,
//           which the bridge also reads, are not part of h_j and are not counted.)
//
// The loss of sentence b is its mean target-token cross-entropy (EOS included, no label
// smoothing): L_b = -1/|y_b| Σ_t log p(y_t | y_<t, x_b). Sentences do not interact, so a
// sentence's norms do not depend on the batch it is measured in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/data/batcher.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/models/seq2seq.h"
#include "qkv/viz/chart.h"
#include "qkv/viz/report.h"

namespace qkv::experiment {

enum class GradientSite { EncoderInput, EncoderOutput };

// "input" | "output"; the parser throws ConfigError naming `flag` and the choices.
std::string_view to_string(GradientSite site) noexcept;
GradientSite parse_gradient_site(std::string_view text, std::string_view flag = "--site");

// batch: src [B, Ts] with src_lengths, tgt_in [B, Tt] (BOS + y), tgt_out [B, Tt] (y + EOS)
// with tgt_lengths, pad_id after each row's end (data::make_batch with targets). Returns
// [B] rows of src_lengths[b] values: ||∂L_b/∂(site at position j)||_2 for j < src_lengths[b]
// (positions include the source EOS when the batch has one). Padding positions are not
// reported. One forward_train_tapped and one backward, in evaluation mode (no dropout; the
// model's mode is restored); the parameter gradients are zeroed afterwards. ValueError
// when the batch has no targets; the model's errors for malformed batches.
std::vector<std::vector<double>> source_gradient_norms(models::Seq2Seq& model,
                                                       const data::Batch& batch, GradientSite site);

// Every pair of `pairs` (source and target ids without BOS/EOS, as data::tokenize gives
// them), batched `mini_batch` sentences at a time with the source EOS and the ids of the
// model's config (as `qkv train` batches them) -> one row of norms per pair, in order.
// ValueError for a corpus without targets or a mini_batch < 1.
std::vector<std::vector<double>> gradient_norms(models::Seq2Seq& model,
                                                const data::TokenizedCorpus& pairs,
                                                GradientSite site, int64_t mini_batch = 16);

// Norms by position over sentences of different lengths.
struct PositionProfile {
  std::vector<double> mean_norm;   // [P] at position j: the mean over sentences longer than j
  std::vector<int64_t> sentences;  // [P] how many sentences are longer than j
};

// Rows of norms (gradient_norms' result) -> the profile, P = the longest row. ValueError
// for a non-finite or negative norm (naming the sentence and position).
PositionProfile profile_by_position(std::span<const std::vector<double>> norms);

// One measured model: its name in tables and legends ("rnn:additive") and its profile.
struct GradientSeries {
  std::string name;
  PositionProfile profile;
};

// "model,position,sentences,mean_grad_norm": one row per series and position (1-based),
// RFC 4180 quoting, values with 9 significant digits.
std::string gradient_csv(std::span<const GradientSeries> series);

// A line chart of the mean norm by position, one line per series. Positions are grouped
// into at most max_buckets buckets of equal width ("1-4", ...; single positions while
// they fit); a bucket's value is the mean over every (sentence, position) in it, and its
// count ("n=") the sentences reaching its first position (shown only when every series
// has the same counts); wide enough for the labels. ValueError for no series or
// max_buckets < 1.
viz::BucketChart gradient_chart(std::span<const GradientSeries> series, std::string title,
                                int64_t max_buckets = 15);

// position | sentences | one column per series: `qkv gradflow`'s table. When the series
// counted different sentences by position (their vocabularies cut them differently), each
// series gets its own "n <name>" column instead of the shared one.
viz::ReportTable gradient_table(std::span<const GradientSeries> series);

// How `qkv gradflow` (and any caller) measures one model file: which pairs, where.
struct GradientFlowOptions {
  GradientSite site = GradientSite::EncoderInput;
  // Measure freshly initialised weights of the file's config, built with `seed`, instead
  // of the trained ones (qkv train's default seed gives the weights its training started
  // from).
  bool init = false;
  uint64_t seed = 1111;
  // Pairs whose source has fewer subword tokens, or either side more, are skipped (the
  // upper limit also capped by a Transformer's positions); then the first max_sentences.
  int64_t min_length = 1;
  int64_t max_length = 100;
  int64_t max_sentences = 500;
  int64_t mini_batch = 16;  // sentences per forward/backward pass
};

struct GradientFlowRun {
  GradientSeries series;  // named "rnn:additive", "transformer", + " (init)" with init
  int64_t sentences = 0;  // pairs measured
  int64_t skipped = 0;    // pairs left out: empty after encoding, or outside the lengths
  double seconds = 0;     // the forward and backward passes
};

// Loads `model` (a model directory or file, as decode::Translator::load), tokenises
// `corpus` with its vocabulary, keeps the usable pairs and measures them. FieldError for
// min_length > max_length or limits below 1, FieldIoError ({model}) when no pair is usable;
// the loader's errors.
GradientFlowRun measure_gradient_flow(const std::filesystem::path& model,
                                      const data::ParallelCorpus& corpus,
                                      const GradientFlowOptions& options);

}  // namespace qkv::experiment
