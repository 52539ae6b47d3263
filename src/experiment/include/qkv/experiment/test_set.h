// Translating and scoring a test set with a trained model: what `qkv compare` measures
// for every variant (quality, quality by source length, decoding speed).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qkv/data/batcher.h"
#include "qkv/data/vocab.h"
#include "qkv/decode/translator.h"
#include "qkv/eval/by_length.h"
#include "qkv/models/seq2seq.h"

namespace qkv::experiment {

struct TestSet {
  std::vector<std::string> sources;     // [N] source lines
  std::vector<std::string> references;  // [N] reference translations
  std::filesystem::path source_file, reference_file;
};

// Reads both files (plain or gzip) as a parallel corpus (strict UTF-8: an invalid line is
// a ValueError naming FILE:LINE; empty pairs are skipped and logged). `max_sentences` > 0
// keeps only the first that many pairs. ValueError when no pair is left.
TestSet read_test_set(const std::filesystem::path& source, const std::filesystem::path& reference,
                      int64_t max_sentences = 0);

// Token rows -> a padded source batch: the driver's (qkv/decode/translator.h).
using decode::source_batch;

struct SearchSettings {
  int64_t beam_size = 5;    // 1: greedy search (the same choices, computed faster)
  double normalize = 0.6;   // length normalisation α of beam search
  int64_t mini_batch = 32;  // sentences decoded together (sorted by length)
  friend bool operator==(const SearchSettings&, const SearchSettings&) = default;
};

struct TestTranslation {
  std::vector<std::string> hypotheses;  // [N]; "" for a sentence that was skipped
  int64_t skipped = 0;  // sources without tokens, or longer than a Transformer's positions
  double seconds = 0;   // wall time: tokenising, searching, detokenising
};

// Translates every source with `model` (evaluation mode is set here) in mini-batches of
// similar lengths; a sentence decodes the same in any batch (beam_search's contract), so
// the result does not depend on mini_batch. ConfigError for bad settings.
TestTranslation translate_sentences(models::Seq2Seq& model, const data::Vocab& vocab,
                                    std::span<const std::string> sources,
                                    const SearchSettings& settings);

struct TestScores {
  eval::BleuScore bleu;
  eval::ChrfScore chrf;
  std::vector<eval::LengthBucket> by_length;        // the six buckets of eval::score_by_length
  std::optional<eval::ConfidenceInterval> bleu_ci;  // with `bootstrap` only
};

// Corpus BLEU, chrF and both per source-length bucket of `hypotheses` [N] against the
// test set's references (one reference stream); with `bootstrap`, BLEU's bootstrap
// interval for the whole set and every bucket. ValueError when the counts differ.
TestScores score_translations(const TestSet& test, std::span<const std::string> hypotheses,
                              const std::optional<eval::BootstrapOptions>& bootstrap = {});

}  // namespace qkv::experiment
