// Learning-rate schedules (see qkv/train/schedule.h).
#include "qkv/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv::train {

// The fields are named as the settings that set them (experiment::TrainSettings and the
// flags: learn_rate, lr_schedule), not as ScheduleOptions spells them: a user who set
// --learn-rate or learn_rate= reads the name they typed.
void validate(const ScheduleOptions& s) {
  QKV_CHECK(std::isfinite(s.learning_rate) && s.learning_rate > 0.0, FieldError, "{learn_rate} ",
            s.learning_rate, " must be finite and > 0 (e.g. 3e-4)");
  QKV_CHECK(s.warmup >= 0, FieldError, "{warmup} ", s.warmup,
            " must be >= 0 updates (0: no warmup)");
  QKV_CHECK(s.kind != LrSchedule::InvSqrt || s.warmup >= 1, FieldError,
            "{warmup} 0 with the inv-sqrt schedule: the decay starts at the end of the "
            "warmup, so give {warmup} >= 1 updates (e.g. 4000), or use {lr_schedule} constant");
}

double learning_rate_at(const ScheduleOptions& s, int64_t update) {
  validate(s);
  QKV_CHECK(update >= 1, ValueError, "learning_rate_at: update ", update,
            " is not >= 1 (updates are numbered from 1: pass step_count() + 1)");
  const double u = double(update);
  const double w = double(s.warmup);
  switch (s.kind) {
    case LrSchedule::Constant:
      return s.warmup == 0 ? s.learning_rate : s.learning_rate * std::min(1.0, u / w);
    case LrSchedule::InvSqrt:
      return s.learning_rate * std::min(u / w, std::sqrt(w / u));
  }
  QKV_THROW(InternalError, "learning_rate_at: unknown schedule kind ", int(s.kind));
}

LrSchedule parse_lr_schedule(std::string_view name, std::string_view flag) {
  for (LrSchedule kind : {LrSchedule::Constant, LrSchedule::InvSqrt})
    if (name == lr_schedule_name(kind)) return kind;
  QKV_THROW(ConfigError, flag, " '", name, "' is not a schedule; use constant or inv-sqrt");
}

std::string_view lr_schedule_name(LrSchedule kind) noexcept {
  switch (kind) {
    case LrSchedule::Constant:
      return "constant";
    case LrSchedule::InvSqrt:
      return "inv-sqrt";
  }
  return "unknown";
}

}  // namespace qkv::train
