// Adam (Kingma & Ba 2015, arXiv:1412.6980, Algorithm 1) and AdamW (Loshchilov & Hutter
// 2019, arXiv:1711.05101, "decoupled weight decay") over one flat float32 arena: the
// parameter store keeps every parameter's values in one contiguous buffer and the
// gradients in another of the same size, so one update is one loop over [0, size).
//
// The update for element i at update t = step_count() + 1 (g = grads[i], θ = params[i]):
//   Adam (L2 decay):  g ← g + wd·θ                    (torch.optim.Adam's weight_decay)
//   m ← β1·m + (1 − β1)·g
//   v ← β2·v + (1 − β2)·g²
//   u ← (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)
//   AdamW (decoupled decay): u ← u + (lr·wd)·θ
//   θ ← θ − u
// ε is added to √v̂ (Algorithm 1 and PyTorch), not to √v (the paper's "ε̂" variant, sec. 2).
// AdamW scales the decay by the scheduled lr, as PyTorch does (Loshchilov & Hutter,
// Algorithm 2, line 12: θ ← θ − η_t(α·m̂/(√v̂ + ε) + λθ); PyTorch's lr is η_t·α and its
// weight_decay λ/α). Scalars (bias corrections, step size, lr·wd) are computed in double
// and rounded to float once per update; the per-element arithmetic is float32.
// One deliberate difference from PyTorch, which first multiplies θ by float(1 − lr·wd):
// near 1 that factor moves in steps of 2^-24, so it distorts small decays (lr·wd = 1e-6
// by up to 3%, always in the same direction; lr·wd < 3e-8 becomes no decay at all). Here
// the decay joins the Adam step before the one rounding at θ's scale (line 12's form).
//
// PyTorch defaults, for comparison: Adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
// weight_decay=0); AdamW(..., weight_decay=1e-2). AdamOptions' defaults equal Adam's; set
// weight_decay explicitly for AdamW. amsgrad, maximize and per-group options are not
// supported: one set of hyperparameters for the whole arena, plus "no decay" ranges.
//
// Threads: the arena is cut into chunks of a fixed size (kOptimizerGrain) on qkv's pool;
// elements are independent, so the result is bitwise identical for any thread count.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/base/aligned.h"

namespace qkv::train {

enum class AdamVariant {
  Adam,   // weight decay as an L2 term added to the gradient (moments see it)
  AdamW,  // decoupled weight decay applied to the parameters (moments never see it)
};

struct AdamOptions {
  AdamVariant variant = AdamVariant::Adam;
  double beta1 = 0.9;         // in [0, 1)
  double beta2 = 0.999;       // in [0, 1)
  double eps = 1e-8;          // > 0
  double weight_decay = 0.0;  // >= 0; 0 turns decay off for both variants
};

// A half-open range [offset, offset + size) of the arena (one parameter tensor).
struct ParamRange {
  int64_t offset = 0;
  int64_t size = 0;
};

// Elements per parallel chunk. Memory-bound (7 streams of floats), so chunks are large.
inline constexpr int64_t kOptimizerGrain = int64_t{1} << 14;

class Adam {
 public:
  // An optimizer for an arena of `size` floats; moments start at zero, step_count() at 0.
  // Throws ConfigError for options out of range (naming the field), ValueError for
  // size < 0, ResourceError when the moments do not fit in memory.
  Adam(int64_t size, const AdamOptions& options);

  int64_t size() const noexcept { return size_; }
  const AdamOptions& options() const noexcept { return options_; }

  // Elements that get no weight decay (biases, LayerNorm gains and biases, embeddings if
  // wanted), as ranges of the arena; replaces any earlier list. Ranges may come in any
  // order and may overlap (they are merged). Throws ValueError naming a range that is
  // empty or negative or reaches past size().
  void set_no_decay(std::span<const ParamRange> ranges);
  // The merged, sorted no-decay ranges.
  std::span<const ParamRange> no_decay() const noexcept { return no_decay_; }

  // One update: params [size] in place, from grads [size], with this update's learning
  // rate (the schedule's value for update step_count() + 1). Then step_count() grows by
  // one. Throws ShapeError when a span's size differs from size(), ValueError for a
  // negative or non-finite learning rate or overlapping spans; nothing is modified then.
  // Non-finite gradients are not checked here (see clip.h: check first, skip the update).
  void step(std::span<float> params, std::span<const float> grads, double learning_rate);

  // --- State for checkpoints: step_count() and the two moment arenas [size] are all a
  // checkpoint needs (besides the parameters and options) to resume bit-exactly. A reader
  // restores by writing into the mutable spans and calling set_step_count().
  int64_t step_count() const noexcept { return step_count_; }
  void set_step_count(int64_t updates);  // ValueError if negative
  std::span<const float> first_moment() const noexcept { return {m_.get(), size_t(size_)}; }
  std::span<const float> second_moment() const noexcept { return {v_.get(), size_t(size_)}; }
  std::span<float> first_moment() noexcept { return {m_.get(), size_t(size_)}; }
  std::span<float> second_moment() noexcept { return {v_.get(), size_t(size_)}; }
  // Checks restored state: moments finite, second moment >= 0, and a zero step count
  // only with zero moments. Throws ValueError naming the first bad element.
  void check_state() const;
  // Back to the initial state: zero moments, step_count() 0.
  void reset() noexcept;

 private:
  int64_t size_;
  AdamOptions options_;
  int64_t step_count_ = 0;
  AlignedArray<float> m_;  // first moment [size]
  AlignedArray<float> v_;  // second moment [size]
  std::vector<ParamRange> no_decay_;
};

}  // namespace qkv::train
