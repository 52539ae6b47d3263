#include "qkv/base/log.h"

#include <gtest/gtest.h>

namespace qkv {
namespace {

TEST(Log, WritesLinesAtOrAboveLevelToStderr) {
  const LogLevel saved = log_level();
  set_log_level(LogLevel::Warning);
  testing::internal::CaptureStderr();
  log(LogLevel::Info, "hidden ", 1);
  log(LogLevel::Warning, "shown ", 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "[qkv warning] shown 2\n");
  set_log_level(saved);
}

TEST(Log, ParsesLevelsAndRejectsUnknown) {
  EXPECT_EQ(parse_log_level("debug"), LogLevel::Debug);
  EXPECT_EQ(parse_log_level("off"), LogLevel::Off);
  EXPECT_THROW(parse_log_level("loud"), ConfigError);
}

}  // namespace
}  // namespace qkv
