// Word alignments from attention, as translate's `--alignment hard|soft` writes them, and
// the token-level heatmaps `qkv attend` draws.
//
// Indices refer to words: the whitespace-separated words of the source line and of the
// translation. Subword pieces are merged with viz::merge_subwords (source pieces of a word
// summed, target pieces averaged); a word starts at a piece with SentencePiece's ▁ marker
// (and <unk> stands alone, as decoding writes it " ⁇ "). Special tokens (the source EOS,
// the target's EOS step, <pad>, <s>) take no part: their attention mass is left out, so a
// soft row need not sum to 1.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "qkv/data/vocab.h"
#include "qkv/viz/heatmap.h"

namespace qkv::tool {

// source_ids [Ts] (the model's source row, ending in EOS), target_ids [T] (the
// translation, without EOS), rows [S, Ts] row-major with S >= T (the hypothesis's attention
// rows; rows past T, the EOS step, are ignored) -> the [target words, source words] map,
// or nullopt when either side has no word (an empty translation).
std::optional<viz::AttentionMap> word_attention(const data::Vocab& vocab,
                                                std::span<const int32_t> source_ids,
                                                std::span<const int32_t> target_ids,
                                                std::span<const float> rows);

// Pharaoh format, 0-based "s-t" pairs ordered by t: for each target word the source word
// it attends to most (the first on ties). "" for nullopt.
std::string hard_alignment(const std::optional<viz::AttentionMap>& words);

// One row per target word, its source-word weights with 4 decimals separated by commas;
// rows separated by spaces. "" for nullopt.
std::string soft_alignment(const std::optional<viz::AttentionMap>& words);

// The token-level map `qkv attend` draws: source pieces (with </s>) as columns, target
// pieces (and </s> for the EOS step when rows has T + 1 rows) as rows, merged into words
// by viz::sentencepiece_word_starts when `merge`.
viz::AttentionMap token_attention(const data::Vocab& vocab, std::span<const int32_t> source_ids,
                                  std::span<const int32_t> target_ids, std::span<const float> rows,
                                  bool merge);

}  // namespace qkv::tool
