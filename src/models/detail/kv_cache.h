// One decoder layer's self-attention keys (or values) of the positions decoded so far,
// for incremental decoding: [B, H, capacity, Dh] of which the first length() positions are
// filled. A step writes its own position in place (the capacity doubles when full), and
// the attention kernel reads view(), a slice, in place (ops::flash_attention takes per-head
// dense rows at any head spacing), so a step no longer copies the whole cache to append
// one row. A beam's reorder copies, in place, only the rows that change (a beam keeps
// most of its rows from step to step; dropping finished sentences leaves unused rows at
// the end of the buffer): no allocation per step in steady state.
#pragma once

#include <cstdint>
#include <span>

#include "qkv/tensor/tensor.h"

namespace qkv::models::detail {

class KvCache {
 public:
  // [B, H, length, Dh], a view of the buffer (undefined before the first append).
  Tensor view() const;
  int64_t length() const noexcept { return length_; }

  // row [B, H, 1, Dh]: the newest position of every row. The first append fixes B, H, Dh
  // and the dtype; later rows must match (ShapeError otherwise).
  void append(const Tensor& row);

  // Row b of the result is row indices[b] of this cache (beam search's reorder; B may
  // change). IndexError for an index outside [0, B).
  void reorder(std::span<const int64_t> indices);

  // Empty again, keeping the buffers for the next batch with as many rows or fewer (and
  // the same H, Dh and dtype).
  void clear() noexcept { length_ = 0; }

 private:
  void grow(int64_t capacity);

  void copy_row(const Tensor& src, int64_t from, const Tensor& dst, int64_t to) const;

  Tensor buffer_;     // [rows >= B, H, capacity, Dh]; the first rows_ are in use
  int64_t rows_ = 0;  // B
  int64_t length_ = 0;
};

}  // namespace qkv::models::detail
