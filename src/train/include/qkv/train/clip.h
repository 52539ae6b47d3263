// Gradient checks before an update: the global L2 norm over the whole gradient arena,
// clipping to a maximum norm, a finite check, and NonFiniteGuard, the policy for
// updates whose gradients are NaN or Inf (skip them; give up after K in a row).
//
// A typical update:
//   const ClipResult c = clip_by_global_norm(grads, max_norm);   // or global_norm()
//   if (!guard.admit(c.finite, opt.step_count() + 1)) continue;  // skipped, nothing changed
//   opt.step(params, grads, learning_rate_at(schedule, opt.step_count() + 1));
// A skipped update leaves the parameters, moments and step count as they were, so the
// next batch is tried with the same learning rate.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv::train {

// Elements per parallel chunk of the reductions below. Partial sums are kept per chunk
// and added in chunk order, so results do not depend on the thread count.
inline constexpr int64_t kReduceGrain = int64_t{1} << 14;

// sqrt(Σ g²) over grads [n], accumulated in double (each g² is exact in double), in a
// fixed order that depends only on n: deterministic for any thread count. Non-finite
// (NaN or Inf) exactly when some element is: the sum of squares of finite floats cannot
// overflow a double.
double global_norm(std::span<const float> grads);

// Index of the first NaN/Inf element of grads [n], or -1 when all are finite. For
// reporting which parameter went bad; global_norm() already tells whether one did.
int64_t find_non_finite(std::span<const float> grads);
inline bool all_finite(std::span<const float> grads) {
  return find_non_finite(grads) < 0;
}

struct ClipResult {
  double norm = 0.0;     // global norm before clipping
  bool finite = true;    // false: some gradient is NaN/Inf and grads were left unchanged
  bool clipped = false;  // true: grads were scaled by max_norm / norm
};

// Scales grads [n] in place by max_norm / norm when their global norm exceeds max_norm,
// so the norm afterwards is max_norm (to float rounding: relative error < 3e-7). Unlike
// torch.nn.utils.clip_grad_norm_ no 1e-6 is added to the norm, so the result is max_norm
// rather than slightly below. Non-finite gradients are reported and not modified. Throws
// FieldError (a ConfigError) naming {clip_norm} unless max_norm is finite and > 0 (clipping
// disabled: call global_norm() instead).
ClipResult clip_by_global_norm(std::span<float> grads, double max_norm);

// Raised when training keeps producing non-finite gradients. A qkv::Error so the CLI
// reports it as one line; its own type so a caller can tell divergence from bad input.
// Its advice marks the fields to change ("a lower {learn_rate}"), for each front end to
// name (qkv/base/field_error.h).
class DivergenceError : public Error, public FieldMessage {
 public:
  DivergenceError(const std::string& marked, std::string where)
      : Error(plain_fields(marked), std::move(where)), FieldMessage(marked) {}
};

// Skips updates with non-finite gradients and counts them; after max_consecutive such
// updates in a row, throws DivergenceError saying what to try. One finite update resets
// the run. Its state (two counters) belongs in a checkpoint for an exact resume.
class NonFiniteGuard {
 public:
  // Throws ConfigError unless max_consecutive >= 1.
  explicit NonFiniteGuard(int max_consecutive = 5);

  // Records update number `update` (1-based, for the message). Returns true when the
  // update may be applied (finite); false when it must be skipped. Throws DivergenceError
  // on the max_consecutive-th non-finite update in a row; `detail` (e.g. which parameter
  // went bad first) is appended to its message.
  bool admit(bool gradients_finite, int64_t update, std::string_view detail = {});

  int max_consecutive() const noexcept { return max_consecutive_; }
  int consecutive_skips() const noexcept { return consecutive_; }
  int64_t total_skips() const noexcept { return total_; }
  // For resuming: throws ValueError unless 0 <= consecutive < max_consecutive and
  // consecutive <= total.
  void restore(int consecutive, int64_t total);

 private:
  int max_consecutive_;
  int consecutive_ = 0;
  int64_t total_ = 0;
};

}  // namespace qkv::train
