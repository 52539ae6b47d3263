// Embedding lookup and its gradient. ids must be in [0, vocab): the ops layer checks
// them (kernels never throw).
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/embedding.h"

namespace qkv::kernels {

// out[i, :] = table[ids[i], :]; table (vocab, dim), ids (n), out (n, dim).
void embedding_gather(const float* table, const int32_t* ids, float* out, int64_t n,
                      int64_t dim) noexcept;
// dtable[ids[i], :] += dout[i, :] for i in order (repeated ids accumulate in index
// order, so the result is deterministic for any thread count: threads split `dim`).
void embedding_scatter_add(const float* dout, const int32_t* ids, float* dtable, int64_t n,
                           int64_t dim) noexcept;

}  // namespace qkv::kernels
