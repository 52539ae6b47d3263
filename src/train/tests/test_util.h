// Helpers shared by the train tests: random arenas, float32 ulp distances, typed errors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "qkv/base/rng.h"

namespace qkv::train::testing {

// Parameters with |θ| in [0.5, 2) and a random sign: no zero crossing within a few small
// steps, so ulp distances are measured on values of one size.
inline std::vector<float> random_params(int64_t n, uint64_t seed) {
  Rng rng(seed, 1);
  std::vector<float> p(static_cast<size_t>(n));
  for (float& x : p) x = rng.uniform(0.5f, 2.0f) * (rng.uniform() < 0.5f ? -1.0f : 1.0f);
  return p;
}

// Gradients N(0, 1) times 10^u with u uniform in [-3, 3]: six decades, to exercise Adam's
// per-element normalisation.
inline std::vector<float> random_grads(int64_t n, uint64_t seed) {
  Rng rng(seed, 2);
  std::vector<float> g(static_cast<size_t>(n));
  for (float& x : g) x = rng.normal() * std::pow(10.0f, rng.uniform(-3.0f, 3.0f));
  return g;
}

// |got - want| in units of the float32 ulp at want (the spacing above |float(want)|).
inline double ulps(float got, double want) {
  const float w = std::fabs(float(want));
  const float ulp = std::nextafter(w, std::numeric_limits<float>::infinity()) - w;
  return std::fabs(double(got) - want) / double(ulp);
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs fn and expects an E whose message contains every one of `parts`.
template <class E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
  }
}

}  // namespace qkv::train::testing
