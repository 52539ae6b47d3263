// Optimizer state: save/restore mid-run resumes bit-exactly, results do not depend on the
// thread count, restored state is validated, reset() starts over.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/train/optimizer.h"
#include "qkv/train/schedule.h"
#include "test_util.h"

namespace qkv::train {
namespace {

using testing::bitwise_equal;
using testing::expect_error;
using testing::random_grads;
using testing::random_params;

const AdamOptions kOptions{.variant = AdamVariant::AdamW, .beta2 = 0.98, .weight_decay = 0.01};
const ScheduleOptions kSchedule{.kind = LrSchedule::InvSqrt, .learning_rate = 5e-3, .warmup = 3};

std::vector<float> copy(std::span<const float> x) {
  return {x.begin(), x.end()};
}

// Runs updates [from, to) (0-based) with gradients and learning rates that depend only on
// the update number, as a data pipeline resumed at the right position would give them.
void run(Adam& opt, std::vector<float>& params, int from, int to) {
  for (int s = from; s < to; ++s) {
    ASSERT_EQ(opt.step_count(), s);
    const std::vector<float> grads = random_grads(opt.size(), 300 + uint64_t(s));
    opt.step(params, grads, learning_rate_at(kSchedule, opt.step_count() + 1));
  }
}

TEST(AdamState, SaveAndRestoreMidRunIsBitwiseEqualToAnUninterruptedRun) {
  const int64_t n = 2 * kOptimizerGrain + 101;
  const ParamRange no_decay[] = {{10, 90}, {kOptimizerGrain - 1, 2}};

  Adam straight(n, kOptions);
  straight.set_no_decay(no_decay);
  std::vector<float> p_straight = random_params(n, 9);
  run(straight, p_straight, 0, 8);

  Adam first(n, kOptions);
  first.set_no_decay(no_decay);
  std::vector<float> p_first = random_params(n, 9);
  run(first, p_first, 0, 3);
  // What a checkpoint holds: step count, both moment arenas, the parameters.
  const int64_t saved_step = first.step_count();
  const std::vector<float> saved_m = copy(first.first_moment());
  const std::vector<float> saved_v = copy(first.second_moment());
  const std::vector<float> saved_p = p_first;
  run(first, p_first, 3, 5);  // progress after the checkpoint, lost in a crash

  // A fresh process: a new optimizer, its state restored through the spans.
  Adam resumed(n, kOptions);
  resumed.set_no_decay(no_decay);
  std::copy(saved_m.begin(), saved_m.end(), resumed.first_moment().begin());
  std::copy(saved_v.begin(), saved_v.end(), resumed.second_moment().begin());
  resumed.set_step_count(saved_step);
  EXPECT_NO_THROW(resumed.check_state());
  std::vector<float> p_resumed = saved_p;
  run(resumed, p_resumed, 3, 8);

  EXPECT_EQ(resumed.step_count(), straight.step_count());
  EXPECT_TRUE(bitwise_equal(p_resumed, p_straight));
  EXPECT_TRUE(bitwise_equal(copy(resumed.first_moment()), copy(straight.first_moment())));
  EXPECT_TRUE(bitwise_equal(copy(resumed.second_moment()), copy(straight.second_moment())));
}

TEST(AdamState, OneAndTwoThreadsGiveBitwiseEqualResults) {
  const int before = num_threads();
  const int64_t n = 5 * kOptimizerGrain + 123;
  const ParamRange no_decay[] = {{kOptimizerGrain - 3, 7}, {4 * kOptimizerGrain, 1000}};
  struct Result {
    std::vector<float> p, m, v;
  };
  auto go = [&](int threads) {
    set_num_threads(threads);
    Adam opt(n, kOptions);
    opt.set_no_decay(no_decay);
    Result r{random_params(n, 11), {}, {}};
    run(opt, r.p, 0, 4);
    r.m = copy(opt.first_moment());
    r.v = copy(opt.second_moment());
    return r;
  };
  const Result one = go(1);
  const Result two = go(2);
  set_num_threads(before);
  EXPECT_TRUE(bitwise_equal(one.p, two.p));
  EXPECT_TRUE(bitwise_equal(one.m, two.m));
  EXPECT_TRUE(bitwise_equal(one.v, two.v));
}

TEST(AdamState, ResetStartsOver) {
  const int64_t n = 300;
  Adam used(n, kOptions), fresh(n, kOptions);
  std::vector<float> p_used = random_params(n, 12), p_fresh = p_used;
  run(used, p_used, 0, 2);
  used.reset();
  EXPECT_EQ(used.step_count(), 0);
  p_used = p_fresh;
  run(used, p_used, 0, 3);
  run(fresh, p_fresh, 0, 3);
  EXPECT_TRUE(bitwise_equal(p_used, p_fresh));
}

TEST(AdamState, CorruptStateIsRejected) {
  Adam opt(5, kOptions);
  EXPECT_NO_THROW(opt.check_state());
  expect_error<ValueError>([&] { opt.set_step_count(-1); }, {"-1 updates"});
  opt.set_step_count(4);
  opt.second_moment()[3] = -1.0f;
  expect_error<ValueError>([&] { opt.check_state(); }, {"element 3", "second moment -1"});
  opt.second_moment()[3] = 0.0f;
  opt.first_moment()[2] = std::nanf("");
  expect_error<ValueError>([&] { opt.check_state(); }, {"element 2", "first moment nan"});
  opt.first_moment()[2] = 0.5f;
  EXPECT_NO_THROW(opt.check_state());
  opt.set_step_count(0);
  expect_error<ValueError>([&] { opt.check_state(); }, {"step count 0", "element 2"});
}

}  // namespace
}  // namespace qkv::train
