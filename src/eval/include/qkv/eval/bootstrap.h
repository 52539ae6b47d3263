// Bootstrap confidence intervals for corpus BLEU (Koehn 2004, "Statistical Significance
// Tests for Machine Translation Evaluation"; Efron & Tibshirani's percentile method).
//
// A test set is one sample of the sentences a system will meet. Drawing its segments
// with replacement, `samples` times, and rescoring each draw shows how much the corpus
// score would move on another sample of the same size; the middle `confidence` share of
// those scores is the interval. It is why a 2-point BLEU gap on 40 long sentences can
// mean nothing while the same gap on 1000 short ones does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qkv/eval/bleu.h"

namespace qkv::eval {

struct ConfidenceInterval {
  double low = 0.0;
  double high = 0.0;
  double confidence = 0.95;  // the share of resampled scores between low and high
  friend bool operator==(const ConfidenceInterval&, const ConfidenceInterval&) = default;
};

struct BootstrapOptions {
  int64_t samples = 1000;    // resampled test sets, in [1, 1000000]
  double confidence = 0.95;  // share of the resampled scores inside the interval, in (0, 1)
  uint64_t seed = 12345;     // the same seed gives the same interval
};

// ValueError naming the option when it is out of range.
void validate(const BootstrapOptions& options);

// The interval of compute_bleu() over `segments` (one entry per test segment, as
// segment_bleu_stats() gives them) resampled with replacement. Percentile method: the
// scores of the resampled sets sorted, low at rank floor(a/2 · S), high at rank
// ceil((1 - a/2) · S) - 1, a = 1 - confidence (S = 1000, 95%: the 26th and the 975th).
// ValueError for no segments or bad options.
ConfidenceInterval bootstrap_bleu(std::span<const BleuStats> segments, const BleuOptions& bleu = {},
                                  const BootstrapOptions& options = {});

// The same from texts: hypotheses [N], references [R][N] as in corpus_bleu() (and its
// errors).
ConfidenceInterval bootstrap_bleu(std::span<const std::string> hypotheses,
                                  std::span<const std::vector<std::string>> references,
                                  const BleuOptions& bleu = {},
                                  const BootstrapOptions& options = {});

}  // namespace qkv::eval
