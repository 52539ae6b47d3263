#include "qkv/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "qkv/base/error.h"

namespace qkv {
namespace {

class ThreadPoolTest : public ::testing::Test {
 protected:
  void TearDown() override { set_num_threads(2); }
};

// A floating-point sum whose result depends on how [0, n) is cut into pieces:
// per-chunk partials combined in chunk order.
float chunked_sum(const std::vector<float>& x, int64_t grain) {
  std::vector<float> partial(static_cast<size_t>(num_chunks(0, int64_t(x.size()), grain)));
  parallel_for(0, int64_t(x.size()), grain, [&](int64_t b, int64_t e) {
    float s = 0;
    for (int64_t i = b; i < e; ++i) s += x[size_t(i)];
    partial[size_t(b / grain)] = s;
  });
  float total = 0;
  for (float p : partial) total += p;
  return total;
}

TEST_F(ThreadPoolTest, EveryIndexVisitedOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    set_num_threads(threads);
    EXPECT_EQ(num_threads(), threads);
    for (int64_t grain : {1, 3, 64, 1000}) {
      std::vector<std::atomic<int>> hits(1001);
      parallel_for(0, 1001, grain, [&](int64_t b, int64_t e) {
        EXPECT_LE(e - b, grain);
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

TEST_F(ThreadPoolTest, ResultsBitwiseIdenticalAcrossThreadCounts) {
  std::vector<float> x(100003);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i)) * 1e3f;
  set_num_threads(1);
  const float one = chunked_sum(x, 777);
  for (int threads : {2, 4, 7}) {
    set_num_threads(threads);
    for (int rep = 0; rep < 5; ++rep) EXPECT_EQ(chunked_sum(x, 777), one);
  }
}

TEST_F(ThreadPoolTest, NestedCallsRunInline) {
  set_num_threads(4);
  std::atomic<int> total{0};
  parallel_for(0, 8, 1, [&](int64_t, int64_t) {
    EXPECT_TRUE(in_parallel_region());
    parallel_for(0, 10, 2, [&](int64_t b, int64_t e) { total += int(e - b); });
  });
  EXPECT_EQ(total.load(), 80);
  EXPECT_FALSE(in_parallel_region());
}

TEST_F(ThreadPoolTest, ExceptionPropagatesToCaller) {
  set_num_threads(3);
  EXPECT_THROW(parallel_for(0, 100, 1,
                            [](int64_t b, int64_t) {
                              if (b == 57) throw std::runtime_error("boom");
                            }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  parallel_for(0, 10, 1, [&](int64_t, int64_t) { ++n; });
  EXPECT_EQ(n.load(), 10);
}

TEST_F(ThreadPoolTest, EmptyRangeAndBadArguments) {
  int calls = 0;
  parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  parallel_for(5, 2, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(parallel_for(0, 10, 0, [](int64_t, int64_t) {}), ValueError);
  EXPECT_THROW(set_num_threads(0), ConfigError);
  EXPECT_THROW(set_num_threads(kMaxThreads + 1), ConfigError);
}

TEST_F(ThreadPoolTest, ConcurrentCallersBothComplete) {
  set_num_threads(2);
  std::atomic<int64_t> a{0}, b{0};
  std::thread other([&] {
    for (int r = 0; r < 50; ++r)
      parallel_for(0, 1000, 10, [&](int64_t s, int64_t e) { a += e - s; });
  });
  for (int r = 0; r < 50; ++r) parallel_for(0, 1000, 10, [&](int64_t s, int64_t e) { b += e - s; });
  other.join();
  EXPECT_EQ(a.load(), 50000);
  EXPECT_EQ(b.load(), 50000);
}

}  // namespace
}  // namespace qkv
