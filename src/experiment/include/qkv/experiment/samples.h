// Sample sentences for the report: a model's translation of a test sentence with its
// attention, over words.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/data/vocab.h"
#include "qkv/experiment/test_set.h"
#include "qkv/models/seq2seq.h"
#include "qkv/viz/heatmap.h"

namespace qkv::experiment {

// Indices of `count` sources to show: the first ones (in file order) with 6 to 16 words,
// readable as a heatmap; when there are fewer such sentences, the first remaining ones
// fill up. Sorted ascending; at most sources.size().
std::vector<size_t> pick_samples(std::span<const std::string> sources, size_t count);

// `model`'s translation of `source` (beam search with `settings`; a Transformer reports
// its last decoder layer's cross-attention averaged over heads) and the attention of
// each step, as a [target words, source words] map: subword pieces merged into words
// (a word's source pieces summed, its target pieces averaged, viz::merge_subwords), the
// source EOS column and the EOS step left out, so a row sums to at most 1. `title`
// becomes the map's title. nullopt when the model has no attention, or the source or
// its translation has no token. Steps that emitted a control token (<pad>, <s>) are left
// out.
std::optional<viz::AttentionMap> attention_sample(models::Seq2Seq& model, const data::Vocab& vocab,
                                                  std::string_view source,
                                                  const SearchSettings& settings,
                                                  std::string title);

}  // namespace qkv::experiment
