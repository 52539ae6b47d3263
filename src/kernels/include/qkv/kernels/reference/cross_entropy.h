// Scalar reference twins of kernels/cross_entropy.h.
#pragma once

#include <cmath>
#include <cstdint>

namespace qkv::kernels {

struct CrossEntropySpec {
  int64_t rows = 0;
  int64_t vocab = 0;
  double label_smoothing = 0.0;  // ε in [0, 1)
  int32_t ignore_index = -1;     // rows with this target contribute nothing
};

namespace ref {

template <class T>
void cross_entropy_forward(const T* logits, const int32_t* targets, T* loss, T* lse,
                           const CrossEntropySpec& spec) noexcept {
  const int64_t V = spec.vocab;
  const double eps = spec.label_smoothing;
  for (int64_t r = 0; r < spec.rows; ++r) {
    const T* x = logits + r * V;
    double m = -INFINITY, sum_x = 0;
    for (int64_t v = 0; v < V; ++v) {
      m = double(x[v]) > m ? double(x[v]) : m;
      sum_x += double(x[v]);
    }
    double total = 0;
    for (int64_t v = 0; v < V; ++v) total += std::exp(double(x[v]) - m);
    const double l = m + std::log(total);
    lse[r] = T(l);
    if (targets[r] == spec.ignore_index) {
      loss[r] = T(0);
      continue;
    }
    loss[r] = T(l - (1.0 - eps) * double(x[targets[r]]) - eps / double(V) * sum_x);
  }
}

// dlogits may be logits (each element is read before it is written).
template <class T>
void cross_entropy_backward(const T* logits, const int32_t* targets, const T* lse, const T* dloss,
                            T* dlogits, const CrossEntropySpec& spec) noexcept {
  const int64_t V = spec.vocab;
  const double eps = spec.label_smoothing;
  for (int64_t r = 0; r < spec.rows; ++r) {
    T* dx = dlogits + r * V;
    if (targets[r] == spec.ignore_index) {
      for (int64_t v = 0; v < V; ++v) dx[v] = T(0);
      continue;
    }
    for (int64_t v = 0; v < V; ++v) {
      const double p = std::exp(double(logits[r * V + v]) - double(lse[r]));
      const double q = (v == targets[r] ? 1.0 - eps : 0.0) + eps / double(V);
      dx[v] = T(double(dloss[r]) * (p - q));
    }
  }
}

}  // namespace ref
}  // namespace qkv::kernels
