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

}  // namespace ref
}  // namespace qkv::kernels
