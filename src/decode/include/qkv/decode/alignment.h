// Words from subword attention, with one merging rule (word_starts) for every front end:
// translate's `--alignment hard|soft`, the heatmaps of `qkv attend --merge-subwords` and
// the report's attention samples.
//
// Indices refer to words: the whitespace-separated words of the source line and of the
// translation. Subword pieces are merged with viz::merge_subwords (source pieces of a word
// summed, target pieces averaged). In word alignments special tokens (the source EOS, the
// target's EOS step, <pad>, <s>) take no part: their attention mass is left out, so a soft
// row need not sum to 1.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qkv/data/vocab.h"
#include "qkv/viz/heatmap.h"

namespace qkv::decode {

// The merging rule: flags [T] for ids [T], true where a new word begins: at token 0, at a
// piece with SentencePiece's ▁ marker, and at and after <unk> and the control tokens
// (</s>, <s>, <pad>), which stand alone (decoding writes <unk> as " ⁇ ", a word of its
// own; </s> never glues onto the last word). Decided by the vocabulary, not by a piece's
// spelling, so a text piece such as "<b" is an ordinary piece.
std::vector<bool> word_starts(const data::Vocab& vocab, std::span<const int32_t> ids);

// The [target words, source words] map of a hypothesis, as the report draws it: special
// tokens left out (source EOS, the EOS step, <pad>, <s>), pieces merged by word_starts.
// Shapes as word_attention's; nullopt when either side has no ordinary token.
std::optional<viz::AttentionMap> word_map(const data::Vocab& vocab,
                                          std::span<const int32_t> source_ids,
                                          std::span<const int32_t> target_ids,
                                          std::span<const float> rows);

// word_map without the words whose label is blank (a lone "▁" piece, which decoding turns
// into whitespace: no word of the output), so that indices are the output's words.
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
// by word_starts when `merge` (</s> stays a column and a row of its own).
viz::AttentionMap token_attention(const data::Vocab& vocab, std::span<const int32_t> source_ids,
                                  std::span<const int32_t> target_ids, std::span<const float> rows,
                                  bool merge);

}  // namespace qkv::decode
