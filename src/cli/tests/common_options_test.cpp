// The flag groups the commands share: one declaration, one default, per-command caps.
#include "qkv/cli/common_options.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "qkv/base/error.h"
#include "qkv/cli/options.h"

namespace qkv::cli {
namespace {

TEST(CommonOptions, SearchFlagsDefaultToSearchValues) {
  OptionSet o;
  add_search_options(o);
  const ParsedOptions p = o.parse(std::vector<std::string>{});
  EXPECT_EQ(search_values(p).beam_size, SearchValues{}.beam_size);
  EXPECT_EQ(search_values(p).normalize, SearchValues{}.normalize);
  EXPECT_EQ(p.get<double>("max-length-factor"), kMaxLengthFactor);
  const ParsedOptions given = o.parse({"-b", "3", "--normalize", "1", "--max-length-factor", "4"});
  EXPECT_EQ(search_values(given).beam_size, 3);
  EXPECT_EQ(search_values(given).normalize, 1.0);
  EXPECT_EQ(search_values(given).max_length_factor, 4.0);
}

TEST(CommonOptions, ACommandCapsTheLengthFlagsOrLeavesTheFactorOut) {
  OptionSet attend;
  add_search_options(attend, 3);
  add_max_length_option(attend, 1000);
  EXPECT_THROW(attend.parse({"--max-length-factor", "4"}), ConfigError);
  EXPECT_THROW(attend.parse({"--max-length", "1001"}), ConfigError);
  EXPECT_EQ(attend.parse(std::vector<std::string>{}).get<int64_t>("max-length"), kDecodeMaxLength);
  OptionSet compare;
  add_search_options(compare, 0);
  EXPECT_EQ(compare.find("max-length-factor"), nullptr);
  EXPECT_EQ(search_values(compare.parse(std::vector<std::string>{})).max_length_factor,
            kMaxLengthFactor);
}

TEST(CommonOptions, ThreadsAndMiniBatchHaveOneDefault) {
  OptionSet o;
  add_threads_option(o);
  add_mini_batch_option(o);
  const ParsedOptions p = o.parse(std::vector<std::string>{});
  EXPECT_EQ(p.get<int64_t>("threads"), 0);
  EXPECT_EQ(p.get<int64_t>("mini-batch"), 32);
  EXPECT_NO_THROW(apply_threads_option(p));  // 0: the pool is left as it is
  EXPECT_THROW(o.parse({"--threads", "300"}), ConfigError);
}

TEST(CommonOptions, TheModelIsRequiredAndTakesItsShortFlag) {
  OptionSet o;
  add_model_option(o);
  EXPECT_THROW(o.parse(std::vector<std::string>{}), ConfigError);
  EXPECT_EQ(o.parse({"-m", "runs/m"}).get<std::filesystem::path>("model"), "runs/m");
}

}  // namespace
}  // namespace qkv::cli
