// Embedding gather and its gradient (scatter-add).
//
// Both are pure data movement (one add per element for the scatter), so they are
// bandwidth-bound; the compiler's auto-vectorised copy/add loops already run at memory
// speed and Highway would add nothing. What matters is how the work is split:
//   gather:       rows are independent -> threads split the ids.
//   scatter-add:  two ids may be equal, so rows of dtable are shared. Threads split the
//                 `dim` axis instead and each walks ids in index order: every element
//                 of dtable receives its additions in the same order for any thread
//                 count, so the result is deterministic without atomics.
#include "qkv/kernels/embedding.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

// Below this many copied floats a single thread is faster than a pool hand-off.
constexpr int64_t kParallelFloats = int64_t{1} << 15;
// Column slab width for scatter-add: 8 cache lines of floats, so each thread writes
// whole lines (no false sharing) and a slab of dtable rows streams well.
constexpr int64_t kDimSlab = 128;

}  // namespace

void embedding_gather(const float* table, const int32_t* ids, float* out, int64_t n,
                      int64_t dim) noexcept {
  if (n <= 0 || dim <= 0) return;
  const auto bytes = static_cast<size_t>(dim) * sizeof(float);
  auto rows = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      std::memcpy(out + i * dim, table + int64_t{ids[i]} * dim, bytes);  // (dim)
  };
  if (n * dim < kParallelFloats) return rows(0, n);
  const int64_t grain = std::max<int64_t>(1, kParallelFloats / dim);
  parallel_for(0, n, grain, rows);
}

void embedding_scatter_add(const float* dout, const int32_t* ids, float* dtable, int64_t n,
                           int64_t dim) noexcept {
  if (n <= 0 || dim <= 0) return;
  auto slab = [&](int64_t d0, int64_t d1) {
    const int64_t w = d1 - d0;
    for (int64_t i = 0; i < n; ++i) {  // in index order: repeated ids sum deterministically
      float* __restrict dst = dtable + int64_t{ids[i]} * dim + d0;  // (w)
      const float* __restrict src = dout + i * dim + d0;            // (w)
      for (int64_t d = 0; d < w; ++d) dst[d] += src[d];
    }
  };
  if (n * dim < kParallelFloats || dim <= kDimSlab) return slab(0, dim);
  parallel_for(0, dim, kDimSlab, slab);
}

}  // namespace qkv::kernels
