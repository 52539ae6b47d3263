#include "detail/top_k.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <type_traits>

#include "detail/rows.h"
#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/reduce.h"

namespace qkv::decode::detail {
namespace {

// Index of the largest value of row r of x [B, V] (F32 or F64); the first on ties (NaNs
// are never larger, so a row's NaNs are passed over).
template <class T>
int32_t argmax_row(const Tensor& x, int64_t r) {
  const int64_t v = x.dim(1);
  const T* row = x.data<T>() + r * v;
  int64_t best = 0;
  T best_value = row[0];
  for (int64_t i = 1; i < v; ++i) {
    if constexpr (std::is_same_v<T, float>) {  // to the next larger value, a vector at a time
      i += kernels::find_above(row + i, v - i, best_value);
      if (i == v) break;
    }
    if (row[i] > best_value) {
      best = i;
      best_value = row[i];
    }
  }
  return static_cast<int32_t>(best);
}

}  // namespace

// A min-heap of k ids: O(V log k), no V-sized buffer.
void top_k(const float* lp, int64_t v, int64_t k, std::vector<int32_t>& ids) {
  const auto heap_order = [lp](int32_t a, int32_t b) {  // "a is better": worst at the front
    return lp[a] > lp[b] || (lp[a] == lp[b] && a < b);
  };
  ids.clear();
  float worst = 0;  // lp of the heap's front once it holds k ids
  for (int64_t i = 0; i < v; ++i) {
    // Once the heap is full, most ids lie below its worst: they are passed over a vector
    // at a time, to the next id that is not below it -- or a NaN, caught here.
    if (int64_t(ids.size()) == k) {
      i += kernels::find_not_below(lp + i, v - i, worst);
      if (i == v) break;
    }
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

std::vector<int32_t> argmax_rows(const Tensor& log_probs) {
  const int64_t rows = log_probs.dim(0), v = log_probs.dim(1);
  std::vector<int32_t> best(static_cast<size_t>(rows));
  parallel_for(0, rows, rows_per_chunk(v), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      best[size_t(r)] = log_probs.dtype() == DType::F64 ? argmax_row<double>(log_probs, r)
                                                        : argmax_row<float>(log_probs, r);
  });
  return best;
}

}  // namespace qkv::decode::detail
