// dropout_forward/backward against the reference, on every SIMD target.
#include "qkv/kernels/dropout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/elementwise.h"

namespace qkv::kernels {
namespace {

using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::kOddSizes;
using testing::random_floats;
using testing::seed_for;

DropoutSpec make_spec(double p, uint64_t seed, uint64_t stream, uint64_t offset) {
  DropoutSpec s;
  s.p = p;
  s.rng = CounterRng(seed, stream);
  s.offset = offset;
  return s;
}

// The kernel evaluates Philox itself (see dropout.cpp), so it must match the
// reference mask exactly: bitwise, for every size, offset alignment (offset % 4 puts
// element 0 anywhere in a Philox block) and 64-bit seeds/streams/offsets.
TEST(Dropout, MatchesReferenceBitwise) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t n : kOddSizes)
      for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{6}, (uint64_t{1} << 34) - 3})
        for (double p : {0.1, 0.5, 0.9}) {
          const DropoutSpec s = make_spec(p, 0x1234567890ABCDEFull, 0xFEDCBA9876543210ull, offset);
          const std::vector<float> x = random_floats(n, seed_for(n, int64_t(offset)));
          std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
          dropout_forward(x.data(), got.data(), n, s);
          ref::dropout_forward(x.data(), want.data(), n, s);
          ASSERT_TRUE(bitwise_equal(got, want)) << "n=" << n << " offset=" << offset << " p=" << p;
          dropout_backward(x.data(), got.data(), n, s);
          ref::dropout_backward(x.data(), want.data(), n, s);
          ASSERT_TRUE(bitwise_equal(got, want)) << "backward n=" << n;
        }
  });
}

// The recorded mask: forward's values unchanged, its bits those of the reference's mask
// (every byte written: the buffer starts as garbage), and the backward from them the bits
// of the regenerating backward; sizes across the pool's 16384-element chunks, offsets
// that put element 0 anywhere in a Philox block, at 1 and 2 threads.
TEST(Dropout, RecordedMaskMatchesTheDrawnOne) {
  const int before = num_threads();
  for_each_simd_target([](const SimdTarget&) {
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{33}, int64_t{100},
                        int64_t{16384 + 5}, int64_t{50001}})
        for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{6}, uint64_t{13}})
          for (double p : {0.1, 0.5}) {
            SCOPED_TRACE(::testing::Message() << "n " << n << " offset " << offset << " p " << p
                                              << " threads " << threads);
            const DropoutSpec s = make_spec(p, 0x1234567890ABCDEFull, 77, offset);
            const std::vector<float> x = random_floats(n, seed_for(n, int64_t(offset)));
            const std::vector<float> dy = random_floats(n, seed_for(n, 5));
            const auto bytes = size_t(ref::dropout_keep_bytes(n));
            const auto count = static_cast<size_t>(n);
            std::vector<float> y(count), want_y(count), dx(count), want_dx(count);
            std::vector<uint8_t> keep(bytes, 0xA5), want_keep(bytes);
            dropout_forward_keep(x.data(), y.data(), n, s, keep.data());
            dropout_forward(x.data(), want_y.data(), n, s);
            EXPECT_TRUE(bitwise_equal(y, want_y));
            std::vector<double> unused(count);
            const std::vector<double> x64(x.begin(), x.end());
            ref::dropout_forward_keep(x64.data(), unused.data(), n, s, want_keep.data());
            ASSERT_EQ(keep, want_keep);
            dropout_backward_keep(dy.data(), dx.data(), n, p, keep.data());
            dropout_backward(dy.data(), want_dx.data(), n, s);
            ASSERT_TRUE(bitwise_equal(dx, want_dx));
          }
    }
  });
  set_num_threads(before);
}

// dropout_add_forward_keep: the bits of dropout_forward_keep and then add (values and the
// recorded mask), and of its reference twin in float; y written over the residual too.
TEST(Dropout, AddedToAResidualHasTheBitsOfDropoutThenAdd) {
  const int before = num_threads();
  for_each_simd_target([](const SimdTarget&) {
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{33}, int64_t{16384 + 5}, int64_t{50001}})
        for (uint64_t offset : {uint64_t{0}, uint64_t{3}, uint64_t{13}}) {
          SCOPED_TRACE(::testing::Message()
                       << "n " << n << " offset " << offset << " threads " << threads);
          const DropoutSpec s = make_spec(0.3, 0x1234567890ABCDEFull, 77, offset);
          const std::vector<float> x = random_floats(n, seed_for(n, int64_t(offset)));
          const std::vector<float> r = random_floats(n, seed_for(n, 9));
          const auto bytes = size_t(ref::dropout_keep_bytes(n));
          const auto count = static_cast<size_t>(n);
          std::vector<float> y(count), want(count), twin(count);
          std::vector<uint8_t> keep(bytes, 0xA5), want_keep(bytes), twin_keep(bytes, 0x5A);
          dropout_add_forward_keep(r.data(), x.data(), y.data(), n, s, keep.data());
          dropout_forward_keep(x.data(), want.data(), n, s, want_keep.data());
          add(r.data(), want.data(), want.data(), n);
          EXPECT_TRUE(bitwise_equal(y, want));
          EXPECT_EQ(keep, want_keep);
          ref::dropout_add_forward_keep(r.data(), x.data(), twin.data(), n, s, twin_keep.data());
          EXPECT_TRUE(bitwise_equal(y, twin));
          EXPECT_EQ(keep, twin_keep);
          std::vector<float> in_place = r;  // y aliasing the residual
          dropout_add_forward_keep(in_place.data(), x.data(), in_place.data(), n, s, keep.data());
          ASSERT_TRUE(bitwise_equal(in_place, want));
        }
    }
  });
  set_num_threads(before);
}

TEST(Dropout, ZeroProbabilityIsIdentity) {
  for_each_simd_target([](const SimdTarget&) {
    const std::vector<float> x = random_floats(1023, 5);
    std::vector<float> y(x.size());
    dropout_forward(x.data(), y.data(), 1023, make_spec(0.0, 1, 2, 3));
    EXPECT_TRUE(bitwise_equal(x, y));
  });
}

// Kept fraction ≈ 1 − p: with n = 2^20 Bernoulli draws the standard deviation of the
// fraction is sqrt(p(1−p)/n) <= 0.0005, so 0.003 is 6 sigma.
TEST(Dropout, MaskStatisticsAndScale) {
  for_each_simd_target([](const SimdTarget&) {
    const int64_t n = int64_t{1} << 20;
    const std::vector<float> x(size_t(n), 1.0f);
    std::vector<float> y(static_cast<size_t>(n));
    for (double p : {0.1, 0.3, 0.5}) {
      dropout_forward(x.data(), y.data(), n, make_spec(p, 42, 0, 0));
      const float scale = float(1.0 / (1.0 - p));
      int64_t kept = 0;
      for (float v : y) {
        ASSERT_TRUE(v == 0.0f || v == scale) << v;
        kept += v != 0.0f;
      }
      EXPECT_NEAR(double(kept) / double(n), 1.0 - p, 0.003) << "p=" << p;
    }
  });
}

TEST(Dropout, BackwardUsesTheForwardMask) {
  const int64_t n = 100000;
  const DropoutSpec s = make_spec(0.4, 9, 1, 77);
  const std::vector<float> x = random_floats(n, 1, 0.5f, 1.5f);  // never 0
  const std::vector<float> dy = random_floats(n, 2, 0.5f, 1.5f);
  std::vector<float> y(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
  dropout_forward(x.data(), y.data(), n, s);
  dropout_backward(dy.data(), dx.data(), n, s);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[size_t(i)] == 0.0f, dx[size_t(i)] == 0.0f) << i;
  // In place (dx aliases dy) gives the same.
  std::vector<float> inplace = dy;
  dropout_backward(inplace.data(), inplace.data(), n, s);
  EXPECT_TRUE(bitwise_equal(inplace, dx));
}

TEST(Dropout, SameForOneAndTwoThreads) {
  const int64_t n = 300001;
  const std::vector<float> x = random_floats(n, 3);
  const int saved = num_threads();
  std::vector<float> y[2];
  for (int t : {1, 2}) {
    set_num_threads(t);
    y[t - 1].resize(static_cast<size_t>(n));
    dropout_forward(x.data(), y[t - 1].data(), n, make_spec(0.25, 5, 6, 7));
  }
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(y[0], y[1]));
}

// Different offsets (e.g. successive layers or steps) must give different masks, and a
// mask shifted by k elements is the mask at offset + k.
TEST(Dropout, OffsetsSelectDifferentMasks) {
  const int64_t n = 4096;
  const std::vector<float> x(size_t(n + 8), 1.0f);
  std::vector<float> a(static_cast<size_t>(n + 8)), b(static_cast<size_t>(n));
  dropout_forward(x.data(), a.data(), n + 8, make_spec(0.5, 1, 0, 0));
  dropout_forward(x.data(), b.data(), n, make_spec(0.5, 1, 0, 5));
  int64_t same_as_unshifted = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(b[size_t(i)], a[size_t(i + 5)]) << i;
    same_as_unshifted += b[size_t(i)] == a[size_t(i)];
  }
  EXPECT_LT(same_as_unshifted, n * 6 / 10);  // independent masks agree ~50% of the time
}

}  // namespace
}  // namespace qkv::kernels
