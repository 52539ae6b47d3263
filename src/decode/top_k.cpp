#include "detail/top_k.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "detail/rows.h"
#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"

namespace qkv::decode::detail {

// A min-heap of k ids: O(V log k), no V-sized buffer.
void top_k(const float* lp, int64_t v, int64_t k, std::vector<int32_t>& ids) {
  const auto heap_order = [lp](int32_t a, int32_t b) {  // "a is better": worst at the front
    return lp[a] > lp[b] || (lp[a] == lp[b] && a < b);
  };
  ids.clear();
  float worst = 0;  // lp of the heap's front once it holds k ids
  constexpr int64_t kBlock = 16;
  for (int64_t i = 0; i < v; ++i) {
    // Most ids are below the k-th best: a whole block of them is passed over with one
    // branch (the comparisons vectorise; a NaN fails them and is caught below).
    if (int64_t(ids.size()) == k && i % kBlock == 0 && i + kBlock <= v) {
      bool below = true;
      for (int64_t j = 0; j < kBlock; ++j) below &= lp[i + j] < worst;
      if (below) {
        i += kBlock - 1;
        continue;
      }
    }
    if (int64_t(ids.size()) == k && lp[i] < worst) continue;
    QKV_CHECK(!std::isnan(lp[i]), ValueError, "beam_search: the model gave a NaN log-probability",
              " for token ", i);
    const auto id = static_cast<int32_t>(i);
    if (int64_t(ids.size()) < k) {
      ids.push_back(id);
      std::push_heap(ids.begin(), ids.end(), heap_order);
    } else if (heap_order(id, ids.front())) {
      std::pop_heap(ids.begin(), ids.end(), heap_order);
      ids.back() = id;
      std::push_heap(ids.begin(), ids.end(), heap_order);
    }
    if (int64_t(ids.size()) == k) worst = lp[ids.front()];
  }
  std::sort_heap(ids.begin(), ids.end(), heap_order);
}

void top_k_rows(const float* lp, int64_t v, std::span<const int64_t> widths,
                std::vector<std::vector<int32_t>>& ids) {
  const auto rows = int64_t(widths.size());
  ids.resize(size_t(rows));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(rows));
  parallel_for(0, rows, rows_per_chunk(v), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      try {
        top_k(lp + r * v, v, widths[size_t(r)], ids[size_t(r)]);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace qkv::decode::detail
