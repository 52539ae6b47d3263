// Progress lines of the decoding commands: when they are printed (a fake clock) and what
// they say.
#include "qkv/cli/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace qkv::cli {
namespace {

TEST(Progress, ALineEveryIntervalWithRateShareAndTimeLeft) {
  double now = 100;
  std::ostringstream out;
  Progress p("qkv translate", "line", 5, 1000, out, [&] { return now; });
  now = 103;
  p.update(30, 100);
  EXPECT_EQ(out.str(), "");  // 3 s: not yet
  now = 110;
  p.update(100, 400);
  EXPECT_EQ(out.str(),
            "qkv translate: 100 lines, 10.0 lines/s, 40% of the input, about 15s left\n");
  now = 112;
  p.update(120, 500);  // 2 s after the last line
  EXPECT_EQ(out.str().find("120"), std::string::npos);
  now = 200;
  p.update(1, 999);
  EXPECT_NE(out.str().find("qkv translate: 1 line, 0.0 lines/s, 99% of the input"),
            std::string::npos)
      << out.str();
}

TEST(Progress, WithoutASizeOnlyCountsAndSilentAtZero) {
  double now = 0;
  std::ostringstream out, silent;
  Progress p("qkv score", "pair", 1, 0, out, [&] { return now; });
  Progress quiet("qkv score", "pair", 0, 0, silent, [&] { return now; });
  now = 2;
  p.update(10, 50);
  quiet.update(10, 50);
  EXPECT_EQ(out.str(), "qkv score: 10 pairs, 5.0 pairs/s\n");
  EXPECT_EQ(silent.str(), "");
}

TEST(Progress, RoughDurations) {
  EXPECT_EQ(rough_duration(0), "0s");
  EXPECT_EQ(rough_duration(44.6), "45s");
  EXPECT_EQ(rough_duration(80), "1m20s");
  EXPECT_EQ(rough_duration(3599), "59m59s");
  EXPECT_EQ(rough_duration(7500), "2h05m");
  EXPECT_EQ(rough_duration(-5), "0s");
}

}  // namespace
}  // namespace qkv::cli
