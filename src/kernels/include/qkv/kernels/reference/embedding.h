// Scalar reference twins of kernels/embedding.h.
#pragma once

#include <cstdint>

namespace qkv::kernels::ref {

template <class T>
void embedding_gather(const T* table, const int32_t* ids, T* out, int64_t n, int64_t dim) noexcept {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) out[i * dim + d] = table[int64_t(ids[i]) * dim + d];
}

template <class T>
void embedding_scatter_add(const T* dout, const int32_t* ids, T* dtable, int64_t n,
                           int64_t dim) noexcept {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) dtable[int64_t(ids[i]) * dim + d] += dout[i * dim + d];
}

}  // namespace qkv::kernels::ref
