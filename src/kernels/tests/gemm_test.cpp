// gemm (OpenBLAS, pool-parallel) and gemm_portable (own SIMD kernel, every target)
// against ref::gemm, plus determinism across thread counts.
#include "qkv/kernels/gemm.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/detail/gemm_portable_testing.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/elementwise.h"
#include "qkv/kernels/reduce.h"

namespace qkv::kernels {
namespace {

using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::random_floats;
using testing::seed_for;

using GemmFn = void (*)(const GemmSpec&, const float*, const float*, float*) noexcept;

// Stored shapes of A, B for a spec (row-major, leading dimension = row stride).
int64_t a_rows(const GemmSpec& s) {
  return s.trans_a ? s.k : s.m;
}
int64_t b_rows(const GemmSpec& s) {
  return s.trans_b ? s.n : s.k;
}

GemmSpec make_spec(int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t pad = 0,
                   double alpha = 1.0, double beta = 0.0) {
  GemmSpec s;
  s.trans_a = ta;
  s.trans_b = tb;
  s.m = m, s.n = n, s.k = k;
  s.alpha = alpha, s.beta = beta;
  s.lda = (ta ? m : k) + pad;
  s.ldb = (tb ? k : n) + pad;
  s.ldc = n + pad;
  return s;
}

std::string describe(const GemmSpec& s) {
  std::ostringstream o;
  o << "m=" << s.m << " n=" << s.n << " k=" << s.k << " ta=" << s.trans_a << " tb=" << s.trans_b
    << " alpha=" << s.alpha << " beta=" << s.beta << " lda=" << s.lda << " ldb=" << s.ldb
    << " ldc=" << s.ldc;
  return o.str();
}

// What a product must come to for (spec, seed): ref::gemm's C and, per element, the
// standard forward-error bound for a length-k dot product (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., eq. 3.5):
//   |ĉ − c| <= γ_k · Σ_p |a_ip||b_pj|,   γ_k = k·u / (1 − k·u),  u = 2^-24,
// scaled by |alpha|, plus the rounding of alpha·acc + beta·c (a few u of
// |alpha·acc| + |beta·c|). We allow (k + 4)·FLT_EPSILON = 2(k + 4)·u, a factor of two
// over the bound, since the blocked kernels add k-slices and scale by alpha separately.
struct Expected {
  std::vector<float> a, b, c0;  // the inputs, from the seed
  std::vector<float> c;         // ref::gemm's result
  std::vector<double> bound;    // allowed |got − c| per element of C (stride ldc)
};

// Computed once per process and shared by every backend and SIMD target checked against
// it: under the sanitizers the two reference products were most of the GEMM tests' time
// (and CI's) when each target recomputed them.
const Expected& expected(const GemmSpec& s, uint32_t seed) {
  static std::map<std::string, Expected> cache;
  const std::string key = describe(s) + " seed=" + std::to_string(seed);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Expected e;
  e.a = random_floats(a_rows(s) * s.lda, seed);
  e.b = random_floats(b_rows(s) * s.ldb, seed + 1);
  e.c0 = random_floats(s.m * s.ldc, seed + 2);
  // beta == 0 must overwrite C: poison it so a kernel that reads C fails.
  if (s.beta == 0.0) std::fill(e.c0.begin(), e.c0.end(), std::numeric_limits<float>::quiet_NaN());
  e.c = e.c0;
  ref::gemm(s, e.a.data(), e.b.data(), e.c.data());
  // Σ_p |a_ip||b_pj| for every (i, j): the same product over |A| and |B|, in double
  // (each term exact, the sum as accurate as the bound needs).
  std::vector<double> abs_a(e.a.size()), abs_b(e.b.size());
  for (size_t i = 0; i < abs_a.size(); ++i) abs_a[i] = std::fabs(double(e.a[i]));
  for (size_t i = 0; i < abs_b.size(); ++i) abs_b[i] = std::fabs(double(e.b[i]));
  GemmSpec plain = s;
  plain.alpha = 1.0, plain.beta = 0.0;
  std::vector<double> mag(e.c.size());
  ref::gemm(plain, abs_a.data(), abs_b.data(), mag.data());
  e.bound.resize(e.c.size());
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      const int64_t at = i * s.ldc + j;
      const double old = s.beta == 0.0 ? 0.0 : std::fabs(s.beta * e.c0[at]);
      e.bound[at] = double(s.k + 4) * FLT_EPSILON * (std::fabs(s.alpha) * mag[at] + old) +
                    FLT_MIN;  // FLT_MIN: exact zeros vs signed/denormal zeros
    }
  return cache.emplace(key, std::move(e)).first->second;
}

// Runs `fn` on the seed's inputs and checks every element of C against expected()'s
// bound, and that the padding columns of C are untouched.
void check_against_ref(GemmFn fn, const GemmSpec& s, uint32_t seed) {
  SCOPED_TRACE(describe(s));
  const Expected& e = expected(s, seed);
  std::vector<float> got = e.c0;
  fn(s, e.a.data(), e.b.data(), got.data());

  int64_t bad = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      const float g = got[i * s.ldc + j], w = e.c[i * s.ldc + j];
      const double bound = e.bound[i * s.ldc + j];
      if (!(std::fabs(double(g) - double(w)) <= bound) && bad++ < 3)
        ADD_FAILURE() << "C[" << i << "," << j << "] = " << g << ", want " << w << " (bound "
                      << bound << ")";
    }
  EXPECT_EQ(bad, 0);
  // Padding columns of C (j >= n) must be untouched.
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = s.n; j < s.ldc; ++j)
      ASSERT_TRUE(std::isnan(e.c0[i * s.ldc + j]) ? std::isnan(got[i * s.ldc + j])
                                                  : got[i * s.ldc + j] == e.c0[i * s.ldc + j])
          << "padding C[" << i << "," << j << "] was written";
}

// Shapes: all combinations of the small odd sizes (vector tails, micro-tile edges),
// then 1023 in one dimension at a time (k-slice boundaries, many tiles) to keep the
// reference triple loop cheap.
std::vector<std::array<int64_t, 3>> shapes() {
  const int64_t small[] = {1, 7, 15, 16, 17, 63, 64, 65};
  std::vector<std::array<int64_t, 3>> out;
  for (int64_t m : small)
    for (int64_t n : small)
      for (int64_t k : small) out.push_back({m, n, k});
  for (int64_t other : {int64_t{7}, int64_t{65}}) {
    out.push_back({1023, other, 17});
    out.push_back({other, 1023, 17});
    out.push_back({17, other, 1023});
  }
  return out;
}

void check_all_shapes(GemmFn fn) {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    for (const auto& [m, n, k] : shapes()) {
      check_against_ref(fn, make_spec(m, n, k, ta, tb), seed_for(m, n, k));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// alpha/beta variants and padded leading dimensions, on a few shapes per transpose.
void check_scaling_and_padding(GemmFn fn) {
  const double ab[][2] = {{1.0, 0.0}, {0.5, 1.0}, {-2.0, -1.5}, {1.0, 1.0}, {3.0, 0.0}};
  for (int t = 0; t < 4; ++t)
    for (const auto& [alpha, beta] : ab)
      for (int64_t pad : {0, 5})
        for (const auto& [m, n, k] :
             {std::array<int64_t, 3>{7, 17, 65}, std::array<int64_t, 3>{65, 64, 300},
              std::array<int64_t, 3>{1, 63, 16}})
          check_against_ref(fn, make_spec(m, n, k, t & 1, t & 2, pad, alpha, beta),
                            seed_for(m + pad, n, k + t));
}

// Large enough for gemm() to split the product on a multi-core machine (by rows, then
// by columns; see choose_blocking in gemm.cpp), and for each of gemm_portable's ways of
// sharing work: row blocks (600 rows), row blocks × column groups (130 rows), several k
// slices added into C (k 1100), and one task per column block (n 4200: wide C).
void check_parallel_shapes(GemmFn fn) {
  for (int t = 0; t < 4; ++t) {
    check_against_ref(fn, make_spec(600, 300, 200, t & 1, t & 2, 3, 1.0, 0.5), seed_for(t, 1));
    check_against_ref(fn, make_spec(130, 1000, 300, t & 1, t & 2, 0), seed_for(t, 2));
    check_against_ref(fn, make_spec(100, 70, 1100, t & 1, t & 2, 1, 1.0, 1.0), seed_for(t, 3));
    check_against_ref(fn, make_spec(37, 4200, 70, t & 1, t & 2, 2, -0.5, -1.5), seed_for(t, 4));
  }
}

class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(num_threads()) {}
  ~ThreadCountGuard() { set_num_threads(saved_); }

 private:
  int saved_;
};

// gemm() and gemm_batched() are checked on both backends whatever Auto picks here.
class ScopedGemmBackend {
 public:
  explicit ScopedGemmBackend(GemmBackend b) { set_gemm_backend(b); }
  ~ScopedGemmBackend() { set_gemm_backend(GemmBackend::Auto); }
};

template <class Body>
void for_each_gemm_backend(const Body& body) {
  for (GemmBackend b : {GemmBackend::OpenBlas, GemmBackend::Portable}) {
    ScopedGemmBackend pin(b);
    SCOPED_TRACE(b == GemmBackend::OpenBlas ? "backend openblas" : "backend portable");
    body();
  }
}

TEST(Gemm, MatchesReferenceAllTransposes) {
  for_each_gemm_backend([] { check_all_shapes(&gemm); });
}
TEST(Gemm, AlphaBetaAndPadding) {
  for_each_gemm_backend([] { check_scaling_and_padding(&gemm); });
}
TEST(Gemm, ParallelBlocksMatchReference) {
  for_each_gemm_backend([] { check_parallel_shapes(&gemm); });
}

TEST(Gemm, BackendChoiceIsReportedAndPinnable) {
  set_gemm_backend(GemmBackend::OpenBlas);
  EXPECT_EQ(gemm_backend(), GemmBackend::OpenBlas);
  EXPECT_EQ(gemm_backend_description().rfind("openblas (core ", 0), 0u);
  set_gemm_backend(GemmBackend::Portable);
  EXPECT_EQ(gemm_backend(), GemmBackend::Portable);
  EXPECT_EQ(gemm_backend_description().rfind("portable (", 0), 0u);
  set_gemm_backend(GemmBackend::Auto);
  EXPECT_NE(gemm_backend(), GemmBackend::Auto);  // resolved to a concrete backend
  EXPECT_EQ(gemm_backend(), auto_gemm_backend(cpu_features(), openblas_get_corename()));
}

TEST(GemmPortable, MatchesReferenceAllTransposes) {
  for_each_simd_target([](const SimdTarget&) { check_all_shapes(&gemm_portable); });
}
TEST(GemmPortable, AlphaBetaAndPadding) {
  for_each_simd_target([](const SimdTarget&) { check_scaling_and_padding(&gemm_portable); });
}
TEST(GemmPortable, ParallelTilesMatchReference) {
  for_each_simd_target([](const SimdTarget&) { check_parallel_shapes(&gemm_portable); });
}

// A block of at most 4 rows reads a stored-(k, n) B in place (whole panels; a partial
// last panel is packed): its rows must have the bits the packed path gives them, i.e.
// those of the same rows inside a 16-row product (which packs). Both sides of kNC and
// kKC, partial panels, beta 0 and 1, padded strides.
TEST(GemmPortable, SmallRowBlocksReadBInPlaceWithThePackedBits) {
  ThreadCountGuard guard;
  set_num_threads(1);  // the 16-row product one block, so packed
  for_each_simd_target([](const SimdTarget&) {
    for (const int64_t m : {1, 2, 4, 5})
      for (const int64_t n : {1, 7, 32, 45, 1030})
        for (const int64_t k : {1, 9, 515})
          for (const bool ta : {false, true})
            for (const double beta : {0.0, 1.0}) {
              const GemmSpec small = make_spec(m, n, k, ta, false, 3, 1.0, beta);
              GemmSpec big = make_spec(16, n, k, ta, false, 3, 1.0, beta);
              // op(A_big)'s first m rows are op(A)'s.
              std::vector<float> a_big = random_floats(a_rows(big) * big.lda, seed_for(m, n, k));
              std::vector<float> a(size_t(a_rows(small) * small.lda));
              for (int64_t i = 0; i < m; ++i)
                for (int64_t p = 0; p < k; ++p)
                  a[size_t(ta ? p * small.lda + i : i * small.lda + p)] =
                      a_big[size_t(ta ? p * big.lda + i : i * big.lda + p)];
              const std::vector<float> b = random_floats(k * small.ldb, seed_for(n, k, m));
              const std::vector<float> c0 = random_floats(16 * small.ldc, seed_for(k, m));
              std::vector<float> c_small(c0.begin(), c0.begin() + m * small.ldc), c_big = c0;
              gemm_portable(small, a.data(), b.data(), c_small.data());
              gemm_portable(big, a_big.data(), b.data(), c_big.data());
              c_big.resize(c_small.size());
              EXPECT_TRUE(bitwise_equal(c_small, c_big)) << describe(small);
            }
  });
}

// Auto's rule (gemm.h): qkv's GEMM with AVX-512 or behind an OpenBLAS that missed the
// CPU's AVX2, OpenBLAS otherwise.
TEST(Gemm, AutoPicksPortableWithAvx512OrAWeakOpenBlasCore) {
  CpuFeatures avx2;
  avx2.avx = avx2.avx2 = avx2.fma = true;
  CpuFeatures avx512 = avx2;
  avx512.avx512f = avx512.avx512bw = avx512.avx512vl = avx512.avx512dq = true;
  CpuFeatures avx512f_only = avx2;  // not Highway's AVX3 target: qkv runs AVX2 there
  avx512f_only.avx512f = true;
  EXPECT_EQ(auto_gemm_backend(avx512, "SkylakeX"), GemmBackend::Portable);
  EXPECT_EQ(auto_gemm_backend(avx512, "Prescott"), GemmBackend::Portable);
  EXPECT_EQ(auto_gemm_backend(avx2, "Zen"), GemmBackend::OpenBlas);
  EXPECT_EQ(auto_gemm_backend(avx2, "Haswell"), GemmBackend::OpenBlas);
  EXPECT_EQ(auto_gemm_backend(avx512f_only, "Haswell"), GemmBackend::OpenBlas);
  EXPECT_EQ(auto_gemm_backend(avx2, "Prescott"), GemmBackend::Portable);
  EXPECT_EQ(auto_gemm_backend(CpuFeatures{}, "Prescott"), GemmBackend::OpenBlas);  // no AVX2
}

// A thread without its packing buffer (allocation failed) computes its block of C with
// ref::gemm: the products stay right, beta applied once.
TEST(GemmPortable, WithoutPackingBuffersFallsBackToTheReference) {
  detail::deny_gemm_portable_buffers_for_testing(true);
  check_scaling_and_padding(&gemm_portable);
  check_parallel_shapes(&gemm_portable);
  detail::deny_gemm_portable_buffers_for_testing(false);
}

// gemm_with_a_row_sums: C with the bits of the plain product, and the sums with the bits
// of kernels::sum_cols over A (trans_a, lda == m: the bias gradient's case) or of an
// in-order loop (otherwise), for shapes that reach every way gemm_portable shares work
// (row blocks, several k slices, column blocks that copy the same rows of A) at 1 and 2
// threads, on every target and both backends, and with the reference fallback.
using RowSumsFn = void (*)(const GemmSpec&, const float*, const float*, float*, float*) noexcept;

void check_row_sums(RowSumsFn with_sums, GemmFn plain, const GemmSpec& s, uint32_t seed) {
  SCOPED_TRACE(describe(s));
  const std::vector<float> a = random_floats(a_rows(s) * s.lda, seed);
  const std::vector<float> b = random_floats(b_rows(s) * s.ldb, seed + 1);
  const std::vector<float> c0 = random_floats(s.m * s.ldc, seed + 2);
  std::vector<float> want_c = c0, got_c = c0;
  std::vector<float> want_sums(static_cast<size_t>(s.m)), got_sums(want_sums.size(), 123.0f);
  plain(s, a.data(), b.data(), want_c.data());
  if (s.trans_a && s.lda == s.m) {
    sum_cols(a.data(), want_sums.data(), s.k, s.m);
  } else {
    for (int64_t i = 0; i < s.m; ++i) {
      float acc = 0.0f;
      for (int64_t p = 0; p < s.k; ++p) acc += s.trans_a ? a[p * s.lda + i] : a[i * s.lda + p];
      want_sums[size_t(i)] = acc;
    }
  }
  with_sums(s, a.data(), b.data(), got_c.data(), got_sums.data());
  EXPECT_TRUE(bitwise_equal(got_c, want_c));
  EXPECT_TRUE(bitwise_equal(got_sums, want_sums));
}

void check_row_sums_shapes(RowSumsFn with_sums, GemmFn plain) {
  ThreadCountGuard guard;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    SCOPED_TRACE(threads);
    for (const bool tb : {false, true}) {
      check_row_sums(with_sums, plain, make_spec(7, 17, 65, true, tb), seed_for(tb, 1));
      check_row_sums(with_sums, plain, make_spec(100, 70, 1100, true, tb, 0, 1.0, 1.0),
                     seed_for(tb, 2));
      check_row_sums(with_sums, plain, make_spec(600, 300, 200, true, tb), seed_for(tb, 3));
      check_row_sums(with_sums, plain, make_spec(40, 2080, 500, true, tb, 0, -0.5, 0.5),
                     seed_for(tb, 4));
      check_row_sums(with_sums, plain, make_spec(33, 4200, 70, true, tb), seed_for(tb, 5));
      check_row_sums(with_sums, plain, make_spec(65, 64, 300, true, tb, 3), seed_for(tb, 6));
      check_row_sums(with_sums, plain, make_spec(65, 64, 300, false, tb, 2), seed_for(tb, 7));
      check_row_sums(with_sums, plain, make_spec(9, 0, 30, true, tb), seed_for(tb, 8));
      check_row_sums(with_sums, plain, make_spec(9, 5, 0, true, tb), seed_for(tb, 9));
    }
  }
}

TEST(Gemm, RowSumsOfAHaveTheBitsOfSumCols) {
  for_each_gemm_backend([] { check_row_sums_shapes(&gemm_with_a_row_sums, &gemm); });
}
TEST(GemmPortable, RowSumsOfAHaveTheBitsOfSumCols) {
  for_each_simd_target([](const SimdTarget&) {
    check_row_sums_shapes(&gemm_portable_with_a_row_sums, &gemm_portable);
  });
  detail::deny_gemm_portable_buffers_for_testing(true);  // each block by ref::gemm
  check_row_sums_shapes(&gemm_portable_with_a_row_sums, &gemm_portable);
  detail::deny_gemm_portable_buffers_for_testing(false);
}

// gemm_with_bias: for alpha = 1 the bits of C's rows filled with the bias and the plain
// product added (beta = 1; what ops::linear ran before), for every way gemm_portable
// cuts the work (small row blocks reading B in place, row blocks, several k slices,
// column blocks), at 1 and 2 threads, on every target, both backends and the reference
// fallback; other alphas within rounding of ref::gemm_with_bias. C starts as NaN: beta
// is not read, every element written. k = 0: C = bias.
using BiasFn = void (*)(const GemmSpec&, const float*, const float*, const float*, float*) noexcept;
using GatedFn = void (*)(const GemmSpec&, const float*, const float*, const float*, int64_t,
                         float*) noexcept;

void check_bias(BiasFn with_bias, GemmFn plain, const GemmSpec& s, uint32_t seed) {
  SCOPED_TRACE(describe(s));
  const std::vector<float> a = random_floats(a_rows(s) * s.lda, seed);
  const std::vector<float> b = random_floats(b_rows(s) * s.ldb, seed + 1);
  const std::vector<float> bias = random_floats(s.n, seed + 2);
  std::vector<float> got(size_t(s.m * s.ldc), std::numeric_limits<float>::quiet_NaN());
  with_bias(s, a.data(), b.data(), bias.data(), got.data());
  std::vector<float> want(got.size(), 5.0f);  // ldc padding as got's (untouched)
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) want[size_t(i * s.ldc + j)] = bias[size_t(j)];
  if (s.alpha == 1.0) {
    GemmSpec added = s;
    added.beta = 1.0;
    plain(added, a.data(), b.data(), want.data());
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const float x = got[size_t(i * s.ldc + j)], y = want[size_t(i * s.ldc + j)];
        ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0)
            << "C[" << i << ", " << j << "] " << x << " vs " << y;
      }
    return;
  }
  ref::gemm_with_bias(s, a.data(), b.data(), bias.data(), want.data());
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j)
      ASSERT_NEAR(got[size_t(i * s.ldc + j)], want[size_t(i * s.ldc + j)],
                  1e-4 * (1 + std::fabs(want[size_t(i * s.ldc + j)])));
}

void check_bias_shapes(BiasFn with_bias, GemmFn plain) {
  ThreadCountGuard guard;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    SCOPED_TRACE(threads);
    for (const bool tb : {false, true}) {
      check_bias(with_bias, plain, make_spec(7, 17, 65, false, tb), seed_for(tb, 1));
      check_bias(with_bias, plain, make_spec(100, 70, 1100, false, tb), seed_for(tb, 2));
      check_bias(with_bias, plain, make_spec(600, 300, 200, false, tb, 1), seed_for(tb, 3));
      check_bias(with_bias, plain, make_spec(40, 2080, 500, true, tb), seed_for(tb, 4));
      check_bias(with_bias, plain, make_spec(65, 64, 300, false, tb, 0, -0.5), seed_for(tb, 5));
      check_bias(with_bias, plain, make_spec(9, 5, 0, false, tb), seed_for(tb, 6));
    }
  }
}

TEST(Gemm, BiasHasTheBitsOfTheRowsFilledThenAdded) {
  for_each_gemm_backend([] { check_bias_shapes(&gemm_with_bias, &gemm); });
}
TEST(GemmPortable, BiasHasTheBitsOfTheRowsFilledThenAdded) {
  for_each_simd_target(
      [](const SimdTarget&) { check_bias_shapes(&gemm_portable_with_bias, &gemm_portable); });
  detail::deny_gemm_portable_buffers_for_testing(true);  // each block by ref::gemm
  check_bias_shapes(&gemm_portable_with_bias, &gemm_portable);
  detail::deny_gemm_portable_buffers_for_testing(false);
}

// The reference twins' results for the ReLU-epilogue checks: target-independent, so
// computed once per (spec, seed) and shared by every target, thread count and the
// fallback (under the sanitizers the scalar twins were most of those tests' time).
struct ReluTwins {
  std::vector<float> bias_relu, gated;
};

const ReluTwins& relu_twins(const GemmSpec& s, uint32_t seed, const std::vector<float>& a,
                            const std::vector<float>& b, const std::vector<float>& bias,
                            const std::vector<float>& gate, int64_t ldg) {
  static std::map<std::string, ReluTwins> cache;
  const std::string key = describe(s) + " seed=" + std::to_string(seed);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ReluTwins t{std::vector<float>(size_t(s.m * s.ldc), nan),
              std::vector<float>(size_t(s.m * s.ldc), nan)};
  ref::gemm_with_bias_relu(s, a.data(), b.data(), bias.data(), t.bias_relu.data());
  ref::gemm_gated(s, a.data(), b.data(), gate.data(), ldg, t.gated.data());
  return cache.emplace(key, std::move(t)).first->second;
}

// The ReLU epilogues (gemm_with_bias_relu, gemm_gated): the bits of the product as
// gemm_with_bias / gemm, then the ReLU kernels (activation_forward, activation_backward
// with the gate as x), over the bias test's shapes (every way gemm_portable cuts the
// work, several k slices: the ReLU and the gate act on the last one only), a padded ldg,
// 1 and 2 threads, both backends, every target and the reference fallback; the
// reference twins (ref::gemm_with_bias_relu / ref::gemm_gated) within rounding. C starts
// as NaN; the gate has exact zeros, -0 and negatives (all close the gate).
void check_relu_epilogues(BiasFn with_bias_relu, BiasFn with_bias, GatedFn gated, GemmFn plain,
                          const GemmSpec& s, uint32_t seed) {
  SCOPED_TRACE(describe(s));
  const std::vector<float> a = random_floats(a_rows(s) * s.lda, seed);
  const std::vector<float> b = random_floats(b_rows(s) * s.ldb, seed + 1);
  const std::vector<float> bias = random_floats(s.n, seed + 2);
  const int64_t ldg = s.n + 3;
  std::vector<float> gate = random_floats(s.m * ldg, seed + 3);
  for (size_t i = 0; i < gate.size(); i += 7) gate[i] = i % 2 ? 0.0f : -0.0f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const ReluTwins& twins = relu_twins(s, seed, a, b, bias, gate, ldg);
  auto expect_bits = [&](const std::vector<float>& got, const std::vector<float>& want) {
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const float x = got[size_t(i * s.ldc + j)], y = want[size_t(i * s.ldc + j)];
        ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0)
            << "C[" << i << ", " << j << "] " << x << " vs " << y;
      }
  };
  auto expect_near = [&](const std::vector<float>& got, const std::vector<float>& want) {
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        ASSERT_NEAR(got[size_t(i * s.ldc + j)], want[size_t(i * s.ldc + j)],
                    1e-4 * (1 + std::fabs(want[size_t(i * s.ldc + j)])))
            << "C[" << i << ", " << j << "]";
  };
  {  // C = relu(alpha·AB + bias)
    std::vector<float> got(size_t(s.m * s.ldc), nan), want(got.size(), nan);
    with_bias_relu(s, a.data(), b.data(), bias.data(), got.data());
    with_bias(s, a.data(), b.data(), bias.data(), want.data());
    for (int64_t i = 0; i < s.m; ++i)
      activation_forward(Activation::Relu, want.data() + i * s.ldc, want.data() + i * s.ldc, s.n);
    expect_bits(got, want);
    expect_near(got, twins.bias_relu);
  }
  {  // C = gate > 0 ? alpha·AB : 0
    std::vector<float> got(size_t(s.m * s.ldc), nan), want(got.size(), nan);
    gated(s, a.data(), b.data(), gate.data(), ldg, got.data());
    GemmSpec zero_beta = s;
    zero_beta.beta = 0.0;
    plain(zero_beta, a.data(), b.data(), want.data());
    for (int64_t i = 0; i < s.m; ++i) {
      const float* g = gate.data() + i * ldg;
      float* row = want.data() + i * s.ldc;
      activation_backward(Activation::Relu, g, g, row, row, s.n);
    }
    expect_bits(got, want);
    expect_near(got, twins.gated);
  }
}

void check_relu_epilogue_shapes(BiasFn with_bias_relu, BiasFn with_bias, GatedFn gated,
                                GemmFn plain) {
  ThreadCountGuard guard;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    SCOPED_TRACE(threads);
    for (const bool tb : {false, true})
      for (const GemmSpec& s :
           {make_spec(7, 17, 65, false, tb), make_spec(3, 70, 40, false, tb),
            make_spec(100, 70, 1100, false, tb), make_spec(600, 300, 200, false, tb, 1),
            make_spec(40, 2080, 500, true, tb), make_spec(65, 64, 300, false, tb, 0, -0.5),
            make_spec(9, 5, 0, false, tb)}) {
        check_relu_epilogues(with_bias_relu, with_bias, gated, plain, s,
                             seed_for(s.m + tb, s.n, s.k));
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

TEST(Gemm, ReluEpiloguesHaveTheBitsOfTheProductThenTheRelu) {
  for_each_gemm_backend([] {
    check_relu_epilogue_shapes(&gemm_with_bias_relu, &gemm_with_bias, &gemm_gated, &gemm);
  });
}
TEST(GemmPortable, ReluEpiloguesHaveTheBitsOfTheProductThenTheRelu) {
  auto check = [] {
    check_relu_epilogue_shapes(&gemm_portable_with_bias_relu, &gemm_portable_with_bias,
                               &gemm_portable_gated, &gemm_portable);
  };
  for_each_simd_target([&](const SimdTarget&) { check(); });
  detail::deny_gemm_portable_buffers_for_testing(true);  // each block by ref::gemm
  check();
  detail::deny_gemm_portable_buffers_for_testing(false);
}

// k == 0: C = beta·C, and beta == 0 overwrites even NaN. m or n == 0: nothing written.
void check_degenerate(GemmFn fn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c(6, nan);
  fn(make_spec(2, 3, 0, false, false), nullptr, nullptr, c.data());
  for (float v : c) EXPECT_EQ(v, 0.0f);
  std::vector<float> c2 = {1, 2, 3, 4, 5, 6};
  fn(make_spec(2, 3, 0, true, true, 0, 1.0, 2.0), nullptr, nullptr, c2.data());
  EXPECT_EQ(c2, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  std::vector<float> c3 = {7};
  fn(make_spec(0, 1, 4, false, false), nullptr, nullptr, c3.data());
  fn(make_spec(1, 0, 4, false, false), nullptr, nullptr, c3.data());
  EXPECT_EQ(c3[0], 7.0f);
}

TEST(Gemm, DegenerateSizes) {
  for_each_gemm_backend([] { check_degenerate(&gemm); });
}
TEST(GemmPortable, DegenerateSizes) {
  for_each_simd_target([](const SimdTarget&) { check_degenerate(&gemm_portable); });
}

void check_batched_against_ref() {
  for (int t = 0; t < 4; ++t)
    for (const auto& [m, n, k] :
         {std::array<int64_t, 3>{7, 16, 65}, std::array<int64_t, 3>{300, 40, 200}}) {
      const GemmSpec s = make_spec(m, n, k, t & 1, t & 2, 1, 0.75, 0.25);
      BatchStrides st;
      st.batch = 3;
      st.a = a_rows(s) * s.lda + 11;  // gaps between matrices
      st.b = b_rows(s) * s.ldb + 5;
      st.c = s.m * s.ldc + 2;
      const std::vector<float> a = random_floats(st.a * st.batch, seed_for(m, t));
      const std::vector<float> b = random_floats(st.b * st.batch, seed_for(n, t));
      std::vector<float> got = random_floats(st.c * st.batch, seed_for(k, t));
      std::vector<float> want = got;
      gemm_batched(s, st, a.data(), b.data(), got.data());
      ref::gemm_batched(s, st, a.data(), b.data(), want.data());
      // Same bound as above with |a|,|b| <= 1: k·u·k is loose but enough per element.
      EXPECT_TRUE(testing::all_close(got, want, {0, double(k + 4) * FLT_EPSILON * double(k), 0}))
          << describe(s);
    }
}

TEST(GemmBatched, MatchesReference) {
  for_each_gemm_backend(check_batched_against_ref);
}

// Results must not depend on the thread count (fixed blocks, see gemm.cpp).

template <class Run>
void expect_same_for_1_and_2_threads(const Run& run) {
  ThreadCountGuard guard;
  set_num_threads(1);
  const std::vector<float> one = run();
  set_num_threads(2);
  const std::vector<float> two = run();
  EXPECT_TRUE(bitwise_equal(one, two));
}

TEST(Gemm, BitwiseIdenticalForOneAndTwoThreads) {
  for (int t = 0; t < 4; ++t)
    for (const auto& [m, n, k] :
         {std::array<int64_t, 3>{515, 300, 257}, std::array<int64_t, 3>{64, 1100, 600},
          std::array<int64_t, 3>{40, 4200, 100}}) {
      const GemmSpec s = make_spec(m, n, k, t & 1, t & 2);
      const std::vector<float> a = random_floats(a_rows(s) * s.lda, seed_for(m, t));
      const std::vector<float> b = random_floats(b_rows(s) * s.ldb, seed_for(n, t));
      for_each_gemm_backend([&] {
        for (GemmFn fn : {GemmFn{&gemm}, GemmFn{&gemm_portable}})
          expect_same_for_1_and_2_threads([&] {
            std::vector<float> c(static_cast<size_t>(s.m * s.ldc));
            fn(s, a.data(), b.data(), c.data());
            return c;
          });
      });
    }
}

TEST(GemmBatched, BitwiseIdenticalForOneAndTwoThreads) {
  const GemmSpec s = make_spec(260, 64, 300, false, true);
  BatchStrides st;
  st.batch = 4;
  st.a = s.m * s.lda, st.b = s.n * s.ldb, st.c = s.m * s.ldc;
  const std::vector<float> a = random_floats(st.a * st.batch, 1);
  const std::vector<float> b = random_floats(st.b * st.batch, 2);
  for_each_gemm_backend([&] {
    expect_same_for_1_and_2_threads([&] {
      std::vector<float> c(static_cast<size_t>(st.c * st.batch));
      gemm_batched(s, st, a.data(), b.data(), c.data());
      return c;
    });
  });
}

}  // namespace
}  // namespace qkv::kernels
