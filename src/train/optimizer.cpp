// Adam / AdamW (see qkv/train/optimizer.h). Plain loops: the update is memory-bound
// (read θ, g, m, v; write θ, m, v), and GCC vectorises them; a chunk's result does not
// depend on which thread runs it or how many there are.
#include "qkv/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"

namespace qkv::train {
namespace {

void check_options(const AdamOptions& o) {
  QKV_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0, ConfigError, "Adam: beta1 = ", o.beta1,
            " is outside [0, 1); the usual value is 0.9");
  QKV_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0, ConfigError, "Adam: beta2 = ", o.beta2,
            " is outside [0, 1); the usual values are 0.98 to 0.999");
  QKV_CHECK(std::isfinite(o.eps) && o.eps > 0.0, ConfigError, "Adam: eps = ", o.eps,
            " must be finite and > 0 (it keeps m / sqrt(v) finite); the usual value is 1e-8");
  QKV_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, ConfigError,
            "Adam: weight_decay = ", o.weight_decay, " must be finite and >= 0");
}

// This update's scalars, computed in double once and rounded to float (as PyTorch's
// Python-float scalars are when they meet a float32 tensor).
struct StepScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float step_size;  // lr / (1 - beta1^t)
  float sqrt_bc2;   // sqrt(1 - beta2^t)
  float eps;
  float l2;     // Adam: wd (g += wd·θ)
  float lr_wd;  // AdamW: lr·wd (u += lr_wd·θ)
};

StepScalars make_scalars(const AdamOptions& o, int64_t t, double lr) {
  const double bc1 = 1.0 - std::pow(o.beta1, double(t));
  const double bc2 = 1.0 - std::pow(o.beta2, double(t));
  return {float(o.beta1),       float(1.0 - o.beta1),  float(o.beta2),
          float(1.0 - o.beta2), float(lr / bc1),       float(std::sqrt(bc2)),
          float(o.eps),         float(o.weight_decay), float(lr * o.weight_decay)};
}

// One update of [0, n). kL2 / kDecoupled select the decay (none, Adam's, AdamW's) at
// compile time so the common loops carry no per-element branch.
template <bool kL2, bool kDecoupled>
void update(float* __restrict p, const float* __restrict g, float* __restrict m,
            float* __restrict v, int64_t n, const StepScalars& s) noexcept {
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i];
    float gi = g[i];
    if constexpr (kL2) gi = gi + s.l2 * pi;
    const float mi = s.beta1 * m[i] + s.one_minus_beta1 * gi;
    const float vi = s.beta2 * v[i] + s.one_minus_beta2 * (gi * gi);
    const float denom = std::sqrt(vi) / s.sqrt_bc2 + s.eps;
    float delta = s.step_size * (mi / denom);
    // Loshchilov & Hutter, Algorithm 2, line 12: decay and Adam step in one subtraction.
    if constexpr (kDecoupled) delta = s.lr_wd * pi + delta;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - delta;
  }
}

using UpdateFn = void (*)(float*, const float*, float*, float*, int64_t,
                          const StepScalars&) noexcept;

UpdateFn pick_update(AdamVariant variant, bool decay) {
  if (!decay) return update<false, false>;
  return variant == AdamVariant::Adam ? update<true, false> : update<false, true>;
}

// Calls fn(begin, end, decay) over the pieces of [lo, hi) in order: decay is false inside
// a no-decay range. `ranges` is sorted and merged.
template <class Fn>
void for_each_piece(std::span<const ParamRange> ranges, int64_t lo, int64_t hi, const Fn& fn) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), lo,
                             [](int64_t x, const ParamRange& r) { return x < r.offset + r.size; });
  int64_t pos = lo;
  for (; it != ranges.end() && it->offset < hi; ++it) {
    const int64_t a = std::max(it->offset, lo), b = std::min(it->offset + it->size, hi);
    if (pos < a) fn(pos, a, true);
    fn(a, b, false);
    pos = b;
  }
  if (pos < hi) fn(pos, hi, true);
}

}  // namespace

Adam::Adam(int64_t size, const AdamOptions& options) : size_(size), options_(options) {
  QKV_CHECK(size >= 0, ValueError, "Adam: arena size ", size, " is negative");
  check_options(options);
  m_ = make_aligned_array<float>(size_t(size));
  v_ = make_aligned_array<float>(size_t(size));
  reset();
}

void Adam::reset() noexcept {
  std::fill_n(m_.get(), size_, 0.0f);
  std::fill_n(v_.get(), size_, 0.0f);
  step_count_ = 0;
}

void Adam::set_no_decay(std::span<const ParamRange> ranges) {
  std::vector<ParamRange> sorted(ranges.begin(), ranges.end());
  for (size_t k = 0; k < sorted.size(); ++k) {
    const ParamRange& r = sorted[k];
    QKV_CHECK(r.offset >= 0 && r.size > 0 && r.size <= size_ - r.offset, ValueError,
              "Adam::set_no_decay: range ", k, " [", r.offset, ", +", r.size,
              ") is empty or outside the arena [0, ", size_, ")");
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const ParamRange& a, const ParamRange& b) { return a.offset < b.offset; });
  no_decay_.clear();
  for (const ParamRange& r : sorted) {
    if (!no_decay_.empty() && r.offset <= no_decay_.back().offset + no_decay_.back().size) {
      ParamRange& last = no_decay_.back();
      last.size = std::max(last.offset + last.size, r.offset + r.size) - last.offset;
    } else {
      no_decay_.push_back(r);
    }
  }
}

void Adam::step(std::span<float> params, std::span<const float> grads, double learning_rate) {
  QKV_CHECK(int64_t(params.size()) == size_ && int64_t(grads.size()) == size_, ShapeError,
            "Adam::step: params [", params.size(), "] and grads [", grads.size(),
            "] must both have the optimizer's size [", size_, "]");
  QKV_CHECK(std::isfinite(learning_rate) && learning_rate >= 0.0, ValueError,
            "Adam::step: learning rate ", learning_rate,
            " must be finite and >= 0; check the schedule's learning rate");
  const auto pa = reinterpret_cast<std::uintptr_t>(params.data());
  const auto ga = reinterpret_cast<std::uintptr_t>(grads.data());
  const auto bytes = std::uintptr_t(size_) * sizeof(float);
  QKV_CHECK(size_ == 0 || pa + bytes <= ga || ga + bytes <= pa, ValueError,
            "Adam::step: params and grads overlap; they must be two separate arenas");
  const StepScalars s = make_scalars(options_, step_count_ + 1, learning_rate);
  const bool decay = options_.weight_decay != 0.0;
  float* p = params.data();
  const float* g = grads.data();
  float* m = m_.get();
  float* v = v_.get();
  const std::span<const ParamRange> ranges = no_decay_;
  parallel_for(0, size_, kOptimizerGrain, [&](int64_t lo, int64_t hi) {
    for_each_piece(ranges, lo, hi, [&](int64_t a, int64_t b, bool in_decay) {
      pick_update(options_.variant, decay && in_decay)(p + a, g + a, m + a, v + a, b - a, s);
    });
  });
  ++step_count_;
}

void Adam::set_step_count(int64_t updates) {
  QKV_CHECK(updates >= 0, ValueError, "Adam::set_step_count: ", updates,
            " updates is negative; the checkpoint's step count is corrupt");
  step_count_ = updates;
}

void Adam::check_state() const {
  for (int64_t i = 0; i < size_; ++i) {
    QKV_CHECK(std::isfinite(m_[i]) && std::isfinite(v_[i]) && v_[i] >= 0.0f, ValueError,
              "Adam state: element ", i, " has first moment ", m_[i], " and second moment ", v_[i],
              "; moments must be finite and the second >= 0 (corrupt checkpoint?)");
    QKV_CHECK(step_count_ > 0 || (m_[i] == 0.0f && v_[i] == 0.0f), ValueError,
              "Adam state: step count 0 but element ", i,
              " has non-zero moments; restore the step count with the moments");
  }
}

}  // namespace qkv::train
