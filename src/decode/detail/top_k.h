// The k best entries of a row of log-probabilities: beam search's per-hypothesis
// proposal step, one pass over the vocabulary per live hypothesis and step.
#pragma once

#include <cstdint>
#include <vector>

namespace qkv::decode::detail {

// The k best ids of lp [V] (higher first, lower id on ties) into `ids`, best first
// (min(k, V) of them). ValueError naming the token when a candidate is NaN.
void top_k(const float* lp, int64_t v, int64_t k, std::vector<int32_t>& ids);

}  // namespace qkv::decode::detail
