// Per-row copies of a per-source tensor, for a decoder state whose rows are hypotheses of
// those sources: an rnn's attention keys and values [B, Ts, ·], which a beam's rows read
// as one tensor. Row r holds the row of the source it decodes. A reorder rewrites only
// the rows whose source changes, copying from the per-source tensor: a beam that keeps
// its rows within their sentences (beam search keeps a continuing hypothesis in its
// parent's row) copies nothing, where gathering every row on every step had been 6.7 %
// of the Bahdanau GRU's beam-4 time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::models::detail {

class SourceRows {
 public:
  SourceRows() = default;
  // per_source [S, ...] (S >= 1, read, never written): row s is source s's.
  explicit SourceRows(Tensor per_source);

  bool defined() const noexcept { return source_.defined(); }
  // [B, ...]: row b is the row of source origin(b) of the per-source tensor.
  const Tensor& rows() const noexcept { return rows_; }
  int64_t origin(int64_t b) const { return origin_.at(size_t(b)); }

  // Row b of the result is row indices[b] of the current rows (B may change). IndexError
  // for an index outside [0, B), ValueError when empty.
  void reorder(std::span<const int64_t> indices);

 private:
  Tensor source_;                // [S, ...]
  Tensor buffer_;                // [capacity, ...] private, once a reorder needed one
  Tensor rows_;                  // source_, or the first B rows of buffer_
  std::vector<int64_t> origin_;  // per row of rows_: its source
  std::vector<int64_t> holds_;   // per row of buffer_: the source it holds (-1: none)
};

}  // namespace qkv::models::detail
