// BLEU and chrF per source-length bucket: how quality falls with sentence length (the
// bottleneck of attention-free encoder-decoders shows up here).
//
// A sentence's length is the number of whitespace-separated words of its *source* line
// (Unicode whitespace, as Python's str.split()). Buckets: 1-10, 11-20, 21-30, 31-40,
// 41-50 and "50+" (51 words and more); an empty source line (0 words) falls into 1-10.
// Each bucket's scores are corpus scores over the sentences in it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/eval/bleu.h"
#include "qkv/eval/bootstrap.h"
#include "qkv/eval/chrf.h"

namespace qkv::eval {

struct LengthBucket {
  std::string label;              // "1-10", ..., "41-50", "50+"
  int64_t min_words = 0;          // inclusive
  int64_t max_words = -1;         // inclusive; -1: no upper bound
  int64_t count = 0;              // sentences in the bucket
  std::optional<BleuScore> bleu;  // unset when count == 0 (an empty corpus has no score)
  std::optional<ChrfScore> chrf;  // unset when count == 0
  // BLEU's bootstrap interval over the bucket's sentences, when asked for and the bucket
  // holds at least ByLengthOptions::bootstrap_min_sentences.
  std::optional<ConfidenceInterval> bleu_ci;
};

struct ByLengthOptions {
  BleuOptions bleu;
  ChrfOptions chrf;
  // Set: each bucket's BLEU also gets a bootstrap confidence interval (bootstrap_bleu),
  // except buckets of fewer than bootstrap_min_sentences sentences: resampling two or
  // three sentences gives a narrow interval that says nothing about other sentences of
  // that length, and a narrow whisker would read as certainty.
  std::optional<BootstrapOptions> bootstrap;
  int64_t bootstrap_min_sentences = 10;
};

// Number of words of a source line: Python's len(line.split()). Throws ValueError when
// `line` is not valid UTF-8.
int64_t source_words(std::string_view line);

// The six buckets in order, every one present (count 0 and no scores when empty).
// sources [N], hypotheses [N], references [R][N] as in corpus_bleu().
// Throws ValueError: sources and hypotheses of different lengths (naming both counts),
// invalid UTF-8 in a source line (naming the line), and whatever corpus_bleu() and
// corpus_chrf() throw for the whole corpus (checked up front, so an error does not depend
// on how the sentences fall into buckets).
std::vector<LengthBucket> score_by_length(std::span<const std::string> sources,
                                          std::span<const std::string> hypotheses,
                                          std::span<const std::vector<std::string>> references,
                                          const ByLengthOptions& options = {});

// A plain-text table, one row per bucket ("-" for no score), e.g.
//   length  sentences   BLEU  chrF2
//   1-10           12  34.21  56.78
//   11-20           0      -      -
// with a "95% CI" column ("31.02-37.40", named by its confidence) when a bucket has an
// interval.
std::string format_by_length(std::span<const LengthBucket> buckets);

}  // namespace qkv::eval
