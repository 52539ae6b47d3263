// Row-parallel loops shared by the row-wise kernels (softmax, layer norm,
// cross-entropy). Private to src/kernels.
#pragma once

#include <algorithm>
#include <cstdint>

#include "qkv/base/thread_pool.h"

namespace qkv::kernels::detail {

// Calls f(r0, r1) over [0, rows) in chunks of whole rows holding about
// `grain_elements` elements each (at least one row), in parallel when there is more
// than one chunk. The chunks depend on the sizes only, so per-row results do not
// depend on the thread count.
template <class F>
void parallel_rows(int64_t rows, int64_t cols, int64_t grain_elements, const F& f) {
  if (rows <= 0) return;
  const int64_t grain = cols >= grain_elements ? 1 : grain_elements / std::max<int64_t>(cols, 1);
  if (rows <= grain) return f(int64_t{0}, rows);
  parallel_for(0, rows, grain, f);
}

}  // namespace qkv::kernels::detail
