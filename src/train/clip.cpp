// Global gradient norm, clipping, finite checks and the non-finite guard
// (see qkv/train/clip.h).
#include "qkv/train/clip.h"

#include <cmath>
#include <vector>

#include "qkv/base/field_error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/elementwise.h"

namespace qkv::train {
namespace {

// Σ x² over [begin, end) with four interleaved accumulators (independent add chains,
// so the loop is not bound by the add latency), combined in a fixed order.
double sum_squares(const float* x, int64_t begin, int64_t end) noexcept {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = begin;
  for (; i + 4 <= end; i += 4)
    for (int k = 0; k < 4; ++k) acc[k] += double(x[i + k]) * double(x[i + k]);
  for (; i < end; ++i) acc[0] += double(x[i]) * double(x[i]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace

double global_norm(std::span<const float> grads) {
  const int64_t n = int64_t(grads.size());
  const float* x = grads.data();
  std::vector<double> partial(size_t(num_chunks(0, n, kReduceGrain)), 0.0);
  parallel_for(0, n, kReduceGrain, [&](int64_t lo, int64_t hi) {
    partial[size_t(lo / kReduceGrain)] = sum_squares(x, lo, hi);
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return std::sqrt(total);
}

int64_t find_non_finite(std::span<const float> grads) {
  const int64_t n = int64_t(grads.size());
  const float* x = grads.data();
  std::vector<int64_t> first(size_t(num_chunks(0, n, kReduceGrain)), -1);
  parallel_for(0, n, kReduceGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      if (!std::isfinite(x[i])) {
        first[size_t(lo / kReduceGrain)] = i;
        return;
      }
  });
  for (int64_t i : first)
    if (i >= 0) return i;
  return -1;
}

ClipResult clip_by_global_norm(std::span<float> grads, double max_norm) {
  QKV_CHECK(std::isfinite(max_norm) && max_norm > 0.0, FieldError, "{clip_norm} ", max_norm,
            " must be finite and > 0 (e.g. 1.0 or 5.0); 0 disables clipping");
  ClipResult r;
  r.norm = global_norm(grads);
  r.finite = std::isfinite(r.norm);
  if (r.finite && r.norm > max_norm) {
    // The scale rounds to float once (relative error <= 2^-24), each product once more.
    const float scale = float(max_norm / r.norm);
    kernels::scale(grads.data(), scale, grads.data(), int64_t(grads.size()));
    r.clipped = true;
  }
  return r;
}

NonFiniteGuard::NonFiniteGuard(int max_consecutive) : max_consecutive_(max_consecutive) {
  QKV_CHECK(max_consecutive >= 1, ConfigError, "NonFiniteGuard: ", max_consecutive,
            " consecutive skipped updates allowed; must be >= 1");
}

bool NonFiniteGuard::admit(bool gradients_finite, int64_t update, std::string_view detail) {
  if (gradients_finite) {
    consecutive_ = 0;
    return true;
  }
  ++consecutive_;
  ++total_;
  if (consecutive_ < max_consecutive_) return false;
  QKV_THROW(DivergenceError, "training diverged: gradients were NaN or Inf in ", consecutive_,
            " consecutive updates (the last is update ", update, "; ", total_, " skipped in total)",
            detail.empty() ? "" : "; ", detail,
            ". Try a lower {learn_rate}, a longer {warmup}, clipping with {clip_norm} (e.g. 1), "
            "or check the data for empty, very long or misaligned lines");
}

void NonFiniteGuard::restore(int consecutive, int64_t total) {
  QKV_CHECK(consecutive >= 0 && consecutive < max_consecutive_ && consecutive <= total, ValueError,
            "NonFiniteGuard::restore: ", consecutive, " consecutive and ", total,
            " total skips do not fit a limit of ", max_consecutive_,
            " in a row (corrupt checkpoint?)");
  consecutive_ = consecutive;
  total_ = total;
}

}  // namespace qkv::train
