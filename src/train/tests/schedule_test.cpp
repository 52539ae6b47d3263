// Learning-rate schedules: values at chosen updates, Vaswani's form, continuity at the
// end of the warmup, and bad settings naming their flag.
#include "qkv/train/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "test_util.h"

namespace qkv::train {
namespace {

using testing::expect_error;

TEST(Schedule, ConstantWithoutWarmupIsConstant) {
  const ScheduleOptions s{.kind = LrSchedule::Constant, .learning_rate = 3e-4};
  for (int64_t u : {int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{1} << 40})
    EXPECT_EQ(learning_rate_at(s, u), 3e-4);
}

TEST(Schedule, WarmupThenConstant) {
  const ScheduleOptions s{.kind = LrSchedule::Constant, .learning_rate = 2e-3, .warmup = 8};
  EXPECT_EQ(learning_rate_at(s, 1), 2e-3 / 8);
  EXPECT_EQ(learning_rate_at(s, 2), 2e-3 / 4);
  EXPECT_EQ(learning_rate_at(s, 4), 2e-3 / 2);
  EXPECT_EQ(learning_rate_at(s, 8), 2e-3);
  EXPECT_EQ(learning_rate_at(s, 9), 2e-3);
  EXPECT_EQ(learning_rate_at(s, 100000), 2e-3);
}

TEST(Schedule, InvSqrtRisesLinearlyThenDecaysAsOneOverSqrt) {
  const ScheduleOptions s{.kind = LrSchedule::InvSqrt, .learning_rate = 1e-3, .warmup = 4000};
  EXPECT_EQ(learning_rate_at(s, 1), 1e-3 / 4000);
  EXPECT_EQ(learning_rate_at(s, 2000), 1e-3 / 2);
  EXPECT_EQ(learning_rate_at(s, 4000), 1e-3);       // the peak, at the end of the warmup
  EXPECT_EQ(learning_rate_at(s, 16000), 1e-3 / 2);  // sqrt(4000 / 16000) = 1/2 exactly
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 400000), 1e-4);
  EXPECT_LT(learning_rate_at(s, 4001), learning_rate_at(s, 4000));
  EXPECT_LT(learning_rate_at(s, 3999), learning_rate_at(s, 4000));
}

// Vaswani et al. (2017), eq. (3): lrate = d_model^-0.5 · min(u^-0.5, u · w^-1.5), equal to
// our form with the peak lr = (d_model · w)^-0.5.
TEST(Schedule, InvSqrtEqualsVaswanisFormula) {
  const double d_model = 512, w = 4000;
  const ScheduleOptions s{.kind = LrSchedule::InvSqrt,
                          .learning_rate = 1.0 / std::sqrt(d_model * w),
                          .warmup = int64_t(w)};
  EXPECT_NEAR(s.learning_rate, 6.99e-4, 1e-6);
  for (int64_t u : {1, 10, 3999, 4000, 4001, 12345, 1000000}) {
    const double vaswani = std::pow(d_model, -0.5) *
                           std::min(std::pow(double(u), -0.5), double(u) * std::pow(w, -1.5));
    EXPECT_NEAR(learning_rate_at(s, u), vaswani, 1e-14 * vaswani) << u;
  }
}

TEST(Schedule, NamesRoundTrip) {
  for (LrSchedule k : {LrSchedule::Constant, LrSchedule::InvSqrt})
    EXPECT_EQ(parse_lr_schedule(lr_schedule_name(k)), k);
  expect_error<ConfigError>([] { parse_lr_schedule("cosine"); },
                            {"--lr-schedule 'cosine'", "constant or inv-sqrt"});
  expect_error<ConfigError>([] { parse_lr_schedule("x", "lr-schedule (train.yml line 3)"); },
                            {"train.yml line 3"});
}

// Named as the settings that set them (TrainSettings::learn_rate, the CLI's --learn-rate).
TEST(ScheduleErrors, BadSettingsNameTheField) {
  expect_error<FieldError>([] { validate({.learning_rate = 0.0}); }, {"learn_rate 0", "> 0"});
  expect_error<FieldError>([] { validate({.learning_rate = std::nan("")}); }, {"learn_rate"});
  expect_error<FieldError>([] { validate({.warmup = -1}); }, {"warmup -1"});
  expect_error<FieldError>([] { validate({.kind = LrSchedule::InvSqrt, .warmup = 0}); },
                           {"warmup 0", "inv-sqrt", "lr_schedule constant"});
  expect_error<ValueError>([] { learning_rate_at({}, 0); }, {"update 0", "step_count() + 1"});
}

}  // namespace
}  // namespace qkv::train
