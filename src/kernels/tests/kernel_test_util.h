// Shared helpers for the kernel tests: run a body on every SIMD target, the odd sizes
// that exercise vector tails, deterministic random inputs, and tolerant comparisons.
//
// Two ways to cover every target:
//   - for_each_simd_target([&](const SimdTarget& t) { ... });  // loop inside one test
//   - TEST_P on a fixture derived from SimdTargetTest, then
//     QKV_INSTANTIATE_SIMD_TARGETS(MySuite);  // one test instance per target, named
//
// Note: inside namespace qkv::kernels, `testing::` names this namespace; spell
// GoogleTest's as `::testing::` (e.g. ::testing::Message).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "qkv/kernels/dispatch.h"

namespace qkv::kernels::testing {

// Sizes around the vector widths (4/8/16 floats) and their multiples: below one
// vector, exactly one, one over, and a large odd size with a ragged tail.
inline constexpr std::array<int64_t, 9> kOddSizes = {1, 7, 15, 16, 17, 63, 64, 65, 1023};

// The SIMD targets for_each_simd_target runs on: every one this CPU supports, or with
// QKV_TEST_SIMD_TARGETS=best only the best (the per-target TEST_P instances are not
// affected: ctest discovers them before the variable applies). The tsan preset sets it:
// ThreadSanitizer looks for races in how the pool shares a kernel's work, which is the same code
// for every target, and under it the scalar target's products were most of CI's TSan time; the ASan
// run checks every target's results.
inline std::vector<SimdTarget> tested_simd_targets() {
  std::vector<SimdTarget> targets = simd_targets();
  const char* only = std::getenv("QKV_TEST_SIMD_TARGETS");
  if (only == nullptr || *only == '\0') return targets;
  if (std::string(only) != "best") {
    std::fprintf(stderr, "QKV_TEST_SIMD_TARGETS='%s': the only value is 'best' (or unset)\n", only);
    std::abort();
  }
  targets.resize(std::min<size_t>(targets.size(), 1));
  return targets;
}

// Runs body(target) once per tested SIMD target, with dispatch pinned to it. Failures
// carry the target name.
template <class F>
void for_each_simd_target(F&& body) {
  const std::vector<SimdTarget> targets = tested_simd_targets();
  ASSERT_FALSE(targets.empty());
  for (const SimdTarget& t : targets) {
    SCOPED_TRACE("SIMD target " + t.name);
    ScopedSimdTarget pin(t.bits);
    body(t);
  }
}

// Parameterised fixture: each instance runs with dispatch pinned to GetParam().
class SimdTargetTest : public ::testing::TestWithParam<SimdTarget> {
 protected:
  void SetUp() override { pin_.emplace(GetParam().bits); }
  void TearDown() override { pin_.reset(); }

 private:
  std::optional<ScopedSimdTarget> pin_;
};

inline std::string simd_target_test_name(const ::testing::TestParamInfo<SimdTarget>& info) {
  std::string name = info.param.name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

#define QKV_INSTANTIATE_SIMD_TARGETS(Suite)                                                  \
  INSTANTIATE_TEST_SUITE_P(Simd, Suite, ::testing::ValuesIn(::qkv::kernels::simd_targets()), \
                           ::qkv::kernels::testing::simd_target_test_name)

// ---- Deterministic inputs -------------------------------------------------------

// n floats uniform in [lo, hi), the same for a given seed on every run and platform
// (mt19937 is fully specified; we map its raw output ourselves rather than use
// uniform_real_distribution, whose algorithm is implementation-defined).
inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::vector<float> out(static_cast<size_t>(n));
  for (float& v : out) {
    const double u = double(gen()) / 4294967296.0;  // [0, 1)
    v = float(lo + (double(hi) - double(lo)) * u);
  }
  return out;
}

inline void fill_random(std::span<float> out, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  const std::vector<float> v = random_floats(int64_t(out.size()), seed, lo, hi);
  std::copy(v.begin(), v.end(), out.begin());
}

// n integers uniform in [lo, hi] (inclusive), deterministic for a seed.
inline std::vector<int64_t> random_ints(int64_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> out(static_cast<size_t>(n));
  const uint64_t span = uint64_t(hi - lo) + 1;
  for (int64_t& v : out) v = lo + int64_t(gen() % span);
  return out;
}

// Widening/narrowing copies, to run a ref:: twin in double on the kernel's float
// inputs (a reference more accurate than the kernel it checks).
inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}
inline std::vector<float> to_float(const std::vector<double>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i]);
  return out;
}

// A seed that differs per (test case, size) so inputs are not all alike.
inline uint32_t seed_for(int64_t a, int64_t b = 0, int64_t c = 0) {
  return uint32_t(0x9E3779B9u ^ uint32_t(a * 1000003 + b * 10007 + c * 101));
}

// ---- Comparisons ----------------------------------------------------------------

// Distance in units in the last place between two finite floats of any sign: the
// number of representable floats between them (0 for equal, incl. +0 vs -0).
inline int64_t ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    // Map the sign-magnitude encoding onto a monotonic integer line.
    return i < 0 ? int64_t(std::numeric_limits<int32_t>::min()) - int64_t(i) : int64_t(i);
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// An element passes when ANY bound holds:  |a − e| <= abs + rel·|e|,  or  ulps within
// `ulp`. Infinities must match exactly; NaN never passes (kernels must not make NaN).
struct Tolerance {
  double rel = 0;
  double abs = 0;
  int64_t ulp = 0;
};

inline bool close_enough(float actual, float expected, const Tolerance& tol) {
  if (std::isnan(actual) || std::isnan(expected)) return false;
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  const double diff = std::fabs(double(actual) - double(expected));
  if (diff <= tol.abs + tol.rel * std::fabs(double(expected))) return true;
  return ulp_distance(actual, expected) <= tol.ulp;
}

// Element-wise comparison; on failure lists the first few mismatches and the worst one.
inline ::testing::AssertionResult all_close(std::span<const float> actual,
                                            std::span<const float> expected, const Tolerance& tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " vs expected " << expected.size();
  std::ostringstream msg;
  int64_t bad = 0, worst = -1;
  double worst_diff = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (close_enough(actual[i], expected[i], tol)) continue;
    if (bad < 5)
      msg << "\n  [" << i << "] got " << actual[i] << " want " << expected[i] << " ("
          << ulp_distance(actual[i], expected[i]) << " ulp)";
    const double d = std::fabs(double(actual[i]) - double(expected[i]));
    if (d > worst_diff) {
      worst_diff = d;
      worst = int64_t(i);
    }
    ++bad;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements differ (rel " << tol.rel << ", abs "
         << tol.abs << ", ulp " << tol.ulp << "); worst at [" << worst << "]" << msg.str();
}

inline ::testing::AssertionResult all_close(const std::vector<float>& actual,
                                            const std::vector<float>& expected,
                                            const Tolerance& tol) {
  return all_close(std::span<const float>(actual), std::span<const float>(expected), tol);
}

inline ::testing::AssertionResult scalar_close(float actual, float expected, const Tolerance& tol) {
  if (close_enough(actual, expected, tol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << actual << " want " << expected << " ("
                                       << ulp_distance(actual, expected) << " ulp)";
}

// Bitwise equality (NaN payloads and the sign of zero included): for determinism tests.
inline ::testing::AssertionResult bitwise_equal(std::span<const float> a,
                                                std::span<const float> b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]))
      return ::testing::AssertionFailure()
             << "first difference at [" << i << "]: " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult bitwise_equal(const std::vector<float>& a,
                                                const std::vector<float>& b) {
  return bitwise_equal(std::span<const float>(a), std::span<const float>(b));
}

}  // namespace qkv::kernels::testing
