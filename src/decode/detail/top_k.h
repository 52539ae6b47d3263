// The k best entries of a row of log-probabilities: beam search's per-hypothesis
// proposal step, one pass over the vocabulary per live hypothesis and step; and the one
// best, greedy decoding's. Both pass over the entries below the best so far a vector at a
// time (kernels::find_not_below, find_above).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::decode::detail {

// The k best ids of lp [V] (higher first, lower id on ties) into `ids`, best first
// (min(k, V) of them). ValueError naming the token when a candidate is NaN.
void top_k(const float* lp, int64_t v, int64_t k, std::vector<int32_t>& ids);

// top_k of every row of lp [rows, V], row r with k = widths[r], into ids[r] (resized to
// rows), the rows split over the thread pool: at two threads beam 4 spent a fifth of its
// main thread's serial time here. A row's ids depend only on that row, so any thread
// count gives the same lists; when rows hold NaNs the error is the first such row's.
void top_k_rows(const float* lp, int64_t v, std::span<const int64_t> widths,
                std::vector<std::vector<int32_t>>& ids);

// The index of each row's largest value, lp [rows, V] (F32 or F64): the first on ties; a
// NaN is never larger, so a row's NaNs are passed over (and a NaN first entry, never
// beaten, gives 0). The rows
// split over the pool (at two threads this loop had been a twentieth of greedy decoding's
// serial time); each row's result is its own, so any thread count gives the same tokens.
std::vector<int32_t> argmax_rows(const Tensor& lp);

}  // namespace qkv::decode::detail
