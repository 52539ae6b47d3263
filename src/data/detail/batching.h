// Shared by batch.cpp and batch_iterator.cpp: option checks and the greedy budget cut.
#pragma once

#include <span>
#include <vector>

#include "qkv/data/batcher.h"

namespace qkv::data::detail {

// Throws ConfigError naming the flag for a bad option; `training` adds max_length checks.
void check_batch_options(const BatchOptions& options, bool training);

// Padded row widths of pair i: source ids (+ EOS), target ids + 1 (0 when source-only).
int64_t src_width(const TokenizedCorpus& corpus, int64_t i, const BatchOptions& options);
int64_t tgt_width(const TokenizedCorpus& corpus, int64_t i);

// Cuts `order` into consecutive batches, each as large as fits the budget
// (B * max width per side <= mini_batch_words, B <= max_sentences). A pair wider than
// the budget alone forms a batch of one.
std::vector<std::vector<int64_t>> cut_by_budget(const TokenizedCorpus& corpus,
                                                std::span<const int64_t> order,
                                                const BatchOptions& options);

}  // namespace qkv::data::detail
