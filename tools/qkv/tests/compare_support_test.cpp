// compare's own pieces: telling its flags from the training flags it passes on, and
// quoting a command line for the report.
#include "compare_support.h"

#include <gtest/gtest.h>

#include "qkv/base/error.h"

namespace qkv::tool {
namespace {

cli::OptionSet own() {
  cli::OptionSet o;
  o.add_list("test-sets", {}, "test");
  o.add_string("variants", "rnn:none", "variants");
  o.add_switch("report", "report");
  o.add_int("beam-size", 5, "beam");
  return o;
}

TEST(SplitArgs, OwnFlagsTakeTheirValuesAndTheRestGoesToTraining) {
  const SplitArgs s =
      split_args(own(), {"--train-sets", "a.en", "b.de", "--test-sets", "t.en", "t.de", "--report",
                         "--dim-emb", "8", "--beam-size=3", "--variants", "transformer", "-c",
                         "cfg.yml", "--learn-rate", "-.5"});
  EXPECT_EQ(s.own, (std::vector<std::string>{"--test-sets", "t.en", "t.de", "--report",
                                             "--beam-size=3", "--variants", "transformer"}));
  EXPECT_EQ(s.train, (std::vector<std::string>{"--train-sets", "a.en", "b.de", "--dim-emb", "8",
                                               "-c", "cfg.yml", "--learn-rate", "-.5"}));
}

TEST(SplitArgs, AMissingValueIsLeftForTheParserToReport) {
  const SplitArgs s = split_args(own(), {"--beam-size", "--report"});
  EXPECT_EQ(s.own, (std::vector<std::string>{"--beam-size", "--report"}));
  EXPECT_THROW(own().parse(s.own), ConfigError);
}

TEST(SplitArgs, UnknownFlagsSuggestTheNearestOfEitherSet) {
  const auto message = [](const std::string& flag) {
    try {
      split_args(own(), {flag, "x"});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("--variant").find("did you mean --variants?"), std::string::npos);
  EXPECT_NE(message("--dim-embb").find("did you mean --dim-emb?"), std::string::npos);
  EXPECT_NE(message("--zzzzzzzzzz").find("see `qkv compare --help`"), std::string::npos);
}

TEST(QuoteArgs, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(quote_args({"--out", "dir/x", "--title", "it's a test", "--after", "5m,1e"}),
            "--out dir/x --title 'it'\\''s a test' --after 5m,1e");
  EXPECT_EQ(quote_args({""}), "''");
}

}  // namespace
}  // namespace qkv::tool
