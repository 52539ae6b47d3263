// --after budgets: updates, epochs, wall time, and combinations (whichever comes first).
#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace qkv::cli {
namespace {

using std::chrono::seconds;
using test_util::TempDir;
using test_util::throws_with;

TEST(CliBudget, EachUnit) {
  EXPECT_EQ(parse_budget("1000u").updates, 1000);
  EXPECT_EQ(parse_budget("5e").epochs, 5);
  EXPECT_EQ(parse_budget("30s").wall_time, seconds(30));
  EXPECT_EQ(parse_budget("10m").wall_time, seconds(600));
  EXPECT_EQ(parse_budget("2h").wall_time, seconds(7200));
  const Budget b = parse_budget("5e");
  EXPECT_FALSE(b.updates.has_value());
  EXPECT_FALSE(b.wall_time.has_value());
}

TEST(CliBudget, CombinationsStopAtWhicheverComesFirst) {
  const Budget b = parse_budget("5e,30m");
  EXPECT_EQ(b.epochs, 5);
  EXPECT_EQ(b.wall_time, seconds(1800));
  EXPECT_FALSE(b.reached(100, 4, seconds(1799)));
  EXPECT_TRUE(b.reached(100, 5, seconds(10)));    // epochs first
  EXPECT_TRUE(b.reached(100, 1, seconds(1800)));  // time first
  const Budget all = parse_budget(" 1000u , 2e,90s ");
  EXPECT_EQ(all, (Budget{1000, 2, seconds(90)}));
  EXPECT_TRUE(all.reached(1000, 0, seconds(0)));
  EXPECT_FALSE(all.reached(999, 1, seconds(89)));
}

TEST(CliBudget, ZeroMeansNoLimit) {
  EXPECT_TRUE(parse_budget("0").unlimited());
  EXPECT_TRUE(parse_budget("0e").unlimited());
  EXPECT_FALSE(parse_budget("0").reached(1'000'000, 1'000, seconds(1'000'000)));
  const Budget b = parse_budget("0u,3e");
  EXPECT_FALSE(b.updates.has_value());
  EXPECT_EQ(b.epochs, 3);
}

TEST(CliBudget, ToStringReadsBack) {
  for (const char* text : {"0", "1000u", "5e", "30s", "10m", "2h", "1000u,5e,90m", "5e,61s"}) {
    const Budget b = parse_budget(text);
    EXPECT_EQ(b.to_string(), text);
    EXPECT_EQ(parse_budget(b.to_string()), b);
  }
  EXPECT_EQ(parse_budget("120m").to_string(), "2h");
}

TEST(CliBudget, BadValuesNameTheFlagAndTheForms) {
  const std::string forms = "use <N>u (updates), <N>e (epochs), <N>s, <N>m or <N>h (wall time)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is empty"},
      {"5x", "'5x' has the unknown unit 'x'"},
      {"5", "'5' has no unit"},
      {"e5", "'e5' does not start with a count"},
      {"-5e", "'-5e' does not start with a count"},
      {"5e,", "an empty part between commas"},
      {"5e,3e", "epochs given twice"},
      {"1h,30m", "wall time given twice"},
      {"10mins", "'10mins' has the unknown unit 'mins'"},
      {"1.5h", "'1.5h' has the unknown unit '.5h'"},
      {"99999999999999999999u", "'99999999999999999999u' has a count that is too large"},
      {"9223372036854775807h", "'9223372036854775807h' is too long a time"},
  };
  for (const auto& [text, why] : cases)
    EXPECT_TRUE(throws_with([&] { parse_budget(text, "--after"); },
                            {"--after: '" + text + "' is not a budget (" + why + "); " + forms}))
        << text;
  EXPECT_TRUE(throws_with([&] { parse_budget("x", "--valid-freq"); }, {"--valid-freq: 'x'"}));
}

TEST(CliBudget, AsAValidatedOption) {
  OptionSet set;
  set.add_validated("after", "0", budget_validator(), "When to stop.");
  const ParsedOptions p = set.parse(std::vector<std::string>{"--after", "2e,1h"});
  EXPECT_EQ(parse_budget(p.get<std::string>("after")), (Budget{std::nullopt, 2, seconds(3600)}));
  EXPECT_TRUE(throws_with(
      [&] {
        set.parse(std::vector<std::string>{"--after", "2x"});
      },
      {"--after: '2x' is not a budget"}));
  TempDir dir;
  const std::string cfg = dir.write("b.yml", "\nafter: 3 days\n");
  EXPECT_TRUE(throws_with(
      [&] {
        set.parse(std::vector<std::string>{"-c", cfg});
      },
      {cfg + ":2: key 'after': '3 days' is not a budget"}));
}

}  // namespace
}  // namespace qkv::cli
