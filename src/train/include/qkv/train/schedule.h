// Learning-rate schedules: each a pure function of the update number, so a run resumed
// from a checkpoint (which stores the optimizer's step count) continues with exactly the
// learning rates of an uninterrupted run.
//
// Updates are numbered from 1: the lr for the next update is
// learning_rate_at(schedule, optimizer.step_count() + 1). With u the update number, lr the
// peak learning rate (--learn-rate) and w the warmup length in updates (--warmup):
//
//   Constant: lr · min(1, u / w)            (w = 0: lr for every update; "no warmup")
//   InvSqrt:  lr · min(u / w, sqrt(w / u))  (w >= 1)
//
// InvSqrt rises linearly to lr at u = w and then decays as 1/sqrt(u). It is Vaswani et
// al. (2017, sec. 5.3), lrate = d_model^-0.5 · min(u^-0.5, u · w^-1.5), rewritten with its
// peak value lr = (d_model · w)^-0.5 factored out: for d_model = 512, w = 4000 the peak
// is 7.0e-4. Values are computed in double.
#pragma once

#include <cstdint>
#include <string_view>

namespace qkv::train {

enum class LrSchedule {
  Constant,  // optional linear warmup, then constant
  InvSqrt,   // linear warmup, then inverse square root decay (Vaswani et al.)
};

struct ScheduleOptions {
  LrSchedule kind = LrSchedule::Constant;
  double learning_rate = 1e-3;  // the peak, --learn-rate; finite and > 0
  int64_t warmup = 0;           // updates of linear warmup, --warmup; >= 0 (>= 1 for InvSqrt)
};

// FieldError (a ConfigError) naming {learn_rate}, {warmup} or {lr_schedule}, the
// TrainSettings fields that set them, when a value is out of range.
void validate(const ScheduleOptions& schedule);

// The learning rate for update number `update` (>= 1, see above). Validates the schedule
// (ConfigError); throws ValueError for update < 1.
double learning_rate_at(const ScheduleOptions& schedule, int64_t update);

// "constant" / "inv-sqrt" (the names a config or flag uses) and back. parse throws
// ConfigError naming `flag` and listing the accepted names.
LrSchedule parse_lr_schedule(std::string_view name, std::string_view flag = "--lr-schedule");
std::string_view lr_schedule_name(LrSchedule kind) noexcept;

}  // namespace qkv::train
