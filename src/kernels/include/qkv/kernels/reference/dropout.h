// Scalar reference twins of kernels/dropout.h.
#pragma once

#include <cstdint>

#include "qkv/base/rng.h"

namespace qkv::kernels {

struct DropoutSpec {
  double p = 0.0;        // drop probability in [0, 1)
  CounterRng rng{0, 0};  // (seed, stream)
  uint64_t offset = 0;   // counter of element 0
};

namespace ref {

template <class T>
void dropout_forward(const T* x, T* y, int64_t n, const DropoutSpec& spec) noexcept {
  const T scale = T(1.0 / (1.0 - spec.p));
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = double(spec.rng.uniform(spec.offset + uint64_t(i))) >= spec.p;
    y[i] = keep ? x[i] * scale : T(0);
  }
}

template <class T>
void dropout_backward(const T* dy, T* dx, int64_t n, const DropoutSpec& spec) noexcept {
  dropout_forward(dy, dx, n, spec);  // the same mask and scale: d(x·m·s)/dx = m·s
}

// The recorded mask's bytes for n elements (see kernels/dropout.h).
constexpr int64_t dropout_keep_bytes(int64_t n) noexcept {
  return n > 0 ? (n + 7) / 8 : 0;
}

template <class T>
void dropout_forward_keep(const T* x, T* y, int64_t n, const DropoutSpec& spec,
                          uint8_t* keep) noexcept {
  const T scale = T(1.0 / (1.0 - spec.p));
  for (int64_t b = 0; b < dropout_keep_bytes(n); ++b) keep[b] = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool kept = double(spec.rng.uniform(spec.offset + uint64_t(i))) >= spec.p;
    y[i] = kept ? x[i] * scale : T(0);
    if (kept) keep[i / 8] = uint8_t(keep[i / 8] | (1u << (i % 8)));
  }
}

template <class T>
void dropout_add_forward_keep(const T* residual, const T* x, T* y, int64_t n,
                              const DropoutSpec& spec, uint8_t* keep) noexcept {
  const T scale = T(1.0 / (1.0 - spec.p));
  for (int64_t b = 0; b < dropout_keep_bytes(n); ++b) keep[b] = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool kept = double(spec.rng.uniform(spec.offset + uint64_t(i))) >= spec.p;
    y[i] = residual[i] + (kept ? x[i] * scale : T(0));
    if (kept) keep[i / 8] = uint8_t(keep[i / 8] | (1u << (i % 8)));
  }
}

template <class T>
void dropout_backward_keep(const T* dy, T* dx, int64_t n, double p, const uint8_t* keep) noexcept {
  const T scale = T(1.0 / (1.0 - p));
  for (int64_t i = 0; i < n; ++i) dx[i] = (keep[i / 8] >> (i % 8)) & 1 ? dy[i] * scale : T(0);
}

}  // namespace ref
}  // namespace qkv::kernels
