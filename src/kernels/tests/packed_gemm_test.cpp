// gemm_packed against its reference twin ref::gemm (C = A · Wᵀ, + bias) on every SIMD
// target: panel tails (n around 32), row tails (m around the register tile), k including
// 0 and 1, strided A, W and C whose extra columns must stay untouched, with and without
// a bias; on FMA targets the result is the in-order fma chain (then + bias), bit for
// bit, and the same for 1 and 2 threads.
#include "qkv/kernels/packed_gemm.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/reference/gemm.h"

namespace qkv::kernels {
namespace {

using testing::for_each_simd_target;
using testing::random_floats;
using testing::seed_for;

constexpr int64_t kPad = 3;  // extra columns of A, W and C
constexpr float kSentinel = 12345.0f;

struct Product {
  int64_t m, n, k;
  std::vector<float> a, w, c;  // A [m, k + pad], W [n, k + pad], C [m, n + pad]
  std::vector<float> bias;     // [n], or empty: none
};

Product make(int64_t m, int64_t n, int64_t k, uint32_t seed, bool with_bias = false) {
  Product p{m,
            n,
            k,
            random_floats(m * (k + kPad), seed),
            random_floats(n * (k + kPad), seed + 1),
            std::vector<float>(size_t(m * (n + kPad)), kSentinel),
            with_bias ? random_floats(n, seed + 2) : std::vector<float>()};
  for (int64_t r = 0; r < n; ++r)  // W's unused columns: NaN, which no output may see
    for (int64_t t = k; t < k + kPad; ++t)
      p.w[size_t(r * (k + kPad) + t)] = std::numeric_limits<float>::quiet_NaN();
  return p;
}

std::vector<float> run_packed(Product p) {
  std::vector<float> packed(size_t(packed_transposed_size(p.n, p.k)), -1.0f);
  pack_transposed(p.w.data(), p.n, p.k, p.k + kPad, packed.data());
  gemm_packed(p.a.data(), p.m, p.k, p.k + kPad, packed.data(), p.n, p.c.data(), p.n + kPad,
              p.bias.empty() ? nullptr : p.bias.data());
  return p.c;
}

void check(const Product& p, bool fused_multiply_add) {
  const std::vector<float> got = run_packed(p);
  std::vector<double> want(size_t(p.m * p.n)), mag(size_t(p.m * p.n));
  std::vector<double> a64(p.a.begin(), p.a.end()), w64(p.w.begin(), p.w.end());
  ref::gemm(GemmSpec{false, true, p.m, p.n, p.k, 1.0, 0.0, p.k + kPad, p.k + kPad, p.n}, a64.data(),
            w64.data(), want.data());
  for (double& x : a64) x = std::fabs(x);
  for (double& x : w64) x = std::fabs(x);
  ref::gemm(GemmSpec{false, true, p.m, p.n, p.k, 1.0, 0.0, p.k + kPad, p.k + kPad, p.n}, a64.data(),
            w64.data(), mag.data());
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t col = 0; col < p.n + kPad; ++col) {
      const float g = got[size_t(r * (p.n + kPad) + col)];
      if (col >= p.n) {
        ASSERT_EQ(g, kSentinel) << "wrote past n at row " << r << " column " << col;
        continue;
      }
      const float b = p.bias.empty() ? 0.0f : p.bias[size_t(col)];
      const double w = want[size_t(r * p.n + col)] + double(b);
      ASSERT_LE(std::fabs(double(g) - w), 2.0 * double(p.k + 1) *
                                              std::numeric_limits<float>::epsilon() *
                                              (mag[size_t(r * p.n + col)] + std::fabs(b)))
          << "row " << r << " column " << col;
      if (fused_multiply_add) {  // the in-order fma chain, bit for bit
        float acc = 0.0f;
        for (int64_t t = 0; t < p.k; ++t)
          acc =
              std::fma(p.a[size_t(r * (p.k + kPad) + t)], p.w[size_t(col * (p.k + kPad) + t)], acc);
        if (!p.bias.empty()) acc += b;
        ASSERT_EQ(std::bit_cast<uint32_t>(g), std::bit_cast<uint32_t>(acc))
            << "row " << r << " column " << col;
      }
    }
}

TEST(PackedGemm, MatchesReferenceOnEveryTarget) {
  // m around the register tile (6 AVX2, 12 AVX-512); n around the 32-column panel.
  const int64_t ms[] = {1, 4, 7, 12, 13, 30};
  const int64_t ns[] = {1, 8, 17, 31, 32, 33, 100};
  const int64_t ks[] = {0, 1, 5, 64, 67};
  for_each_simd_target([&](const SimdTarget& target) {
    const bool fma = target.name == "AVX2" || target.name == "AVX3";
    uint32_t i = 0;
    for (int64_t m : ms)
      for (int64_t n : ns)
        for (int64_t k : ks) {
          for (const bool bias : {false, true}) {
            SCOPED_TRACE(::testing::Message()
                         << "m " << m << " n " << n << " k " << k << " bias " << bias);
            check(make(m, n, k, seed_for(++i, m, n), bias), fma);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
  });
}

TEST(PackedGemm, SameBitsForOneAndTwoThreads) {
  // Large enough to be split over the pool: the decoder's output projection at beam 4.
  const Product p = make(128, 8000 + 7, 256, 7, /*with_bias=*/true);
  const int64_t before = num_threads();
  set_num_threads(1);
  const std::vector<float> one = run_packed(p);
  set_num_threads(2);
  const std::vector<float> two = run_packed(p);
  set_num_threads(before);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(one[i]), std::bit_cast<uint32_t>(two[i])) << "element " << i;
}

}  // namespace
}  // namespace qkv::kernels
