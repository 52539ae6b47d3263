// NonFiniteGuard: skips non-finite updates, gives up after K in a row with a message that
// says what to try, and works with the optimizer so a skipped update changes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "qkv/train/clip.h"
#include "qkv/train/optimizer.h"
#include "test_util.h"

namespace qkv::train {
namespace {

using testing::bitwise_equal;
using testing::expect_error;

TEST(NonFiniteGuard, FiniteUpdatesPassAndResetTheRun) {
  NonFiniteGuard guard(3);
  EXPECT_TRUE(guard.admit(true, 1));
  EXPECT_FALSE(guard.admit(false, 2));
  EXPECT_FALSE(guard.admit(false, 3));
  EXPECT_EQ(guard.consecutive_skips(), 2);
  EXPECT_TRUE(guard.admit(true, 4));  // the run of two ends here
  EXPECT_EQ(guard.consecutive_skips(), 0);
  EXPECT_FALSE(guard.admit(false, 5));
  EXPECT_FALSE(guard.admit(false, 6));
  EXPECT_EQ(guard.total_skips(), 4);
}

TEST(NonFiniteGuard, ThrowsOnTheKthConsecutiveSkipSayingWhatToTry) {
  NonFiniteGuard guard(3);
  EXPECT_TRUE(guard.admit(true, 1));
  EXPECT_FALSE(guard.admit(false, 2));
  EXPECT_TRUE(guard.admit(true, 3));
  EXPECT_FALSE(guard.admit(false, 4));
  EXPECT_FALSE(guard.admit(false, 5));
  expect_error<DivergenceError>(
      [&] { guard.admit(false, 6, "first bad gradient: decoder.out.weight[17]"); },
      {"3 consecutive updates", "update 6", "4 skipped in total", "decoder.out.weight[17]",
       "learn_rate", "warmup", "clip_norm", "check the data"});
  // A DivergenceError is a qkv::Error, so the CLI's one-line report catches it.
  NonFiniteGuard once(1);
  EXPECT_THROW(once.admit(false, 1), Error);
}

TEST(NonFiniteGuard, RestoreContinuesTheCount) {
  NonFiniteGuard guard(2);
  guard.restore(1, 7);
  EXPECT_EQ(guard.total_skips(), 7);
  EXPECT_THROW(guard.admit(false, 9), DivergenceError);
  expect_error<ValueError>([&] { guard.restore(2, 5); }, {"limit of 2"});
  expect_error<ValueError>([&] { guard.restore(1, 0); }, {"1 consecutive and 0 total"});
  expect_error<ConfigError>([] { NonFiniteGuard(0); }, {"must be >= 1"});
}

// The loop clip.h describes: a NaN batch is skipped and leaves parameters, moments and
// the step count as they were; the next finite batch proceeds.
TEST(NonFiniteGuard, SkippedUpdateLeavesTheOptimizerUntouched) {
  Adam opt(4, {});
  NonFiniteGuard guard(2);
  std::vector<float> params = {1, 2, 3, 4};
  auto update = [&](std::vector<float> grads) {
    const ClipResult c = clip_by_global_norm(grads, 1.0);
    if (!guard.admit(c.finite, opt.step_count() + 1)) return false;
    opt.step(params, grads, 1e-2);
    return true;
  };
  ASSERT_TRUE(update({1, -1, 1, -1}));
  const std::vector<float> p = params;
  const std::vector<float> m(opt.first_moment().begin(), opt.first_moment().end());
  EXPECT_FALSE(update({1, std::nanf(""), 1, 1}));
  EXPECT_TRUE(bitwise_equal(params, p));
  EXPECT_TRUE(bitwise_equal({opt.first_moment().begin(), opt.first_moment().end()}, m));
  EXPECT_EQ(opt.step_count(), 1);
  EXPECT_TRUE(update({0.5f, 0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(opt.step_count(), 2);
  EXPECT_EQ(guard.total_skips(), 1);
}

}  // namespace
}  // namespace qkv::train
