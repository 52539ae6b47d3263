// The flash-attention micro-kernel (kernels/detail/tile_product.h) against a scalar
// loop, on every SIMD target: odd m (row tails below the register tile), odd n (a full
// vector, then a masked one), odd k, A row-major or read transposed, overwrite or
// accumulate, with or without a bias, with or without a prefetch span of one or more rows
// (which must not change a bit), and rows of B and C wider than n whose extra columns must stay
// untouched.
#include "kernels/detail/tile_product.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernel_test_util.h"

namespace qkv::kernels {
namespace {

using detail::TileProduct;
using testing::for_each_simd_target;
using testing::random_floats;
using testing::seed_for;

constexpr int64_t kPad = 5;  // extra columns of B and C beyond n
constexpr float kSentinel = 12345.0f;

struct Case {
  int64_t m, n, k;
  bool transposed_a, accumulate, bias;
  int64_t prefetch_floats;  // 0: no prefetch span
  int64_t prefetch_rows;    // of prefetch_floats each, prefetch_floats + 3 apart
};

// C as the kernel must produce it: per element the fma chain over t = 0..k−1 in order,
// then alpha·acc (or fma(alpha, acc, C)), then + bias.
std::vector<float> scalar_product(const TileProduct& p, std::vector<float> c) {
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t col = 0; col < p.n; ++col) {
      float acc = 0.0f;
      for (int64_t t = 0; t < p.k; ++t)
        acc = std::fma(p.a[r * p.ars + t * p.ats], p.b[t * p.ldb + col], acc);
      float& out = c[r * p.ldc + col];
      out = p.accumulate ? std::fma(p.alpha, acc, out) : p.alpha * acc;
      if (p.bias) out += p.bias[col];
    }
  return c;
}

// |got − want| within a few roundings of each term: 4·(k + 2)·eps·(|alpha|·Σ|a·b| + |C|).
double bound(const TileProduct& p, const std::vector<float>& c0, int64_t r, int64_t col) {
  double mag = 0;
  for (int64_t t = 0; t < p.k; ++t)
    mag += std::fabs(double(p.a[r * p.ars + t * p.ats]) * double(p.b[t * p.ldb + col]));
  mag = std::fabs(double(p.alpha)) * mag + (p.accumulate ? std::fabs(c0[r * p.ldc + col]) : 0.0) +
        (p.bias ? std::fabs(double(p.bias[col])) : 0.0);
  return 4.0 * double(p.k + 2) * std::numeric_limits<float>::epsilon() * mag;
}

void check(const Case& cs, bool fused_multiply_add, uint32_t seed) {
  const int64_t lda = cs.transposed_a ? cs.m + 3 : cs.k + 3;  // A [m, k] or Aᵀ [k, m]
  const std::vector<float> a = random_floats((cs.transposed_a ? cs.k : cs.m) * lda, seed);
  std::vector<float> b = random_floats(cs.k * (cs.n + kPad), seed + 1);
  for (int64_t t = 0; t < cs.k; ++t)  // unused columns of B: NaN, which no output may see
    for (int64_t col = cs.n; col < cs.n + kPad; ++col)
      b[t * (cs.n + kPad) + col] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c0 = random_floats(cs.m * (cs.n + kPad), seed + 2);
  for (int64_t r = 0; r < cs.m; ++r)
    for (int64_t col = cs.n; col < cs.n + kPad; ++col) c0[r * (cs.n + kPad) + col] = kSentinel;
  std::vector<float> c = c0;
  const std::vector<float> bias = random_floats(cs.n + kPad, seed + 3);
  TileProduct p{cs.m,
                cs.n,
                cs.k,
                a.data(),
                cs.transposed_a ? 1 : lda,
                cs.transposed_a ? lda : 1,
                b.data(),
                cs.n + kPad,
                c.data(),
                cs.n + kPad,
                0.75f,
                cs.accumulate,
                cs.bias ? bias.data() : nullptr};
  const int64_t prefetch_ld = cs.prefetch_floats + 3;  // rows not all on a line's start
  const std::vector<float> prefetched = random_floats(cs.prefetch_rows * prefetch_ld, seed + 4);
  if (cs.prefetch_floats > 0) {
    p.prefetch = prefetched.data() + 1;
    p.prefetch_floats = cs.prefetch_floats;
    p.prefetch_rows = cs.prefetch_rows;
    p.prefetch_ld = prefetch_ld;
  }
  detail::tile_product(p);
  const std::vector<float> want = scalar_product(p, c0);
  for (int64_t r = 0; r < cs.m; ++r)
    for (int64_t col = 0; col < cs.n + kPad; ++col) {
      const float got = c[r * p.ldc + col], w = want[r * p.ldc + col];
      if (col >= cs.n) {
        ASSERT_EQ(got, kSentinel) << "wrote past n at row " << r << " column " << col;
      } else if (fused_multiply_add) {  // same operations in the same order: same bits
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(w))
            << "row " << r << " column " << col << ": " << got << " vs " << w;
      } else {
        ASSERT_LE(std::fabs(double(got) - double(w)), 2 * bound(p, c0, r, col))
            << "row " << r << " column " << col;
      }
    }
}

TEST(TileProduct, MatchesScalarLoopOnEveryTarget) {
  // Rows around the register tile (6 on AVX2, 12 on AVX-512) and with up to 6 rows below
  // it (AVX-512's 4-vector tail blocks: 5, 16, 18, 64), columns around one, two and four
  // vectors (8 / 16 lanes), depths incl. 0 (C = 0, or C unchanged when accumulating).
  const int64_t ms[] = {1, 5, 6, 7, 11, 12, 13, 16, 18, 25, 64};
  const int64_t ns[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 100};
  const int64_t ks[] = {0, 1, 3, 64, 67};
  for_each_simd_target([&](const SimdTarget& target) {
    // Targets with FMA run MulAdd as one rounding, like std::fma.
    const bool fma = target.name == "AVX2" || target.name == "AVX3";
    uint32_t n = 0;
    for (int64_t m : ms)
      for (int64_t nn : ns)
        for (int64_t k : ks)
          for (bool transposed : {false, true})
            for (bool accumulate : {false, true})
              for (bool bias : {false, true}) {
                SCOPED_TRACE(::testing::Message()
                             << "m " << m << " n " << nn << " k " << k << " transposed A "
                             << transposed << " accumulate " << accumulate << " bias " << bias);
                // Prefetch spans of none, fewer and more lines than the product has
                // steps, in one row or several (a GEMM's next block of A).
                const int64_t prefetch = int64_t(n % 3) * 700, rows = 1 + int64_t(n % 4) * 5;
                check({m, nn, k, transposed, accumulate, bias, prefetch / rows, rows}, fma,
                      seed_for(++n, m, nn));
                if (::testing::Test::HasFatalFailure()) return;
              }
  });
}

}  // namespace
}  // namespace qkv::kernels
