// Every command-line mistake is a ConfigError that names the flag and says what to do.
#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace qkv::cli {
namespace {

using test_util::throws_with;
using test_util::train_like;
using Args = std::vector<std::string>;

// Parses `args` with train_like() and expects a ConfigError containing `parts`.
::testing::AssertionResult rejects(const Args& args, const std::vector<std::string>& parts) {
  const OptionSet set = train_like();
  return throws_with([&] { set.parse(args); }, parts);
}

TEST(CliErrors, UnknownFlagSuggestsTheClosest) {
  EXPECT_TRUE(rejects({"--dim-embd", "5"}, {"unknown flag --dim-embd; did you mean --dim-emb?"}));
  EXPECT_TRUE(rejects({"--dmi-emb", "5"}, {"did you mean --dim-emb?"}));  // swapped letters
  EXPECT_TRUE(rejects({"--beamsize", "5"}, {"did you mean --beam-size?"}));
  EXPECT_TRUE(rejects({"--train", "a"}, {"did you mean --train-sets?"}));  // a unique prefix
  EXPECT_TRUE(rejects({"--dim-embd=5"}, {"unknown flag --dim-embd; did you mean --dim-emb?"}));
  EXPECT_TRUE(rejects({"-dim-emb", "5"}, {"unknown flag -dim-emb; did you mean --dim-emb?"}));
}

TEST(CliErrors, UnknownFlagWithoutACloseOne) {
  EXPECT_TRUE(
      rejects({"--zebra-crossing"}, {"unknown flag --zebra-crossing; see --help for the flags"}));
  EXPECT_TRUE(rejects({"-x"}, {"unknown flag -x; the short flags are -c, -h, -b, -m, -o"}));
}

TEST(CliErrors, MissingValue) {
  EXPECT_TRUE(rejects({"--dim-emb"}, {"--dim-emb: missing value; give it as --dim-emb INT"}));
  EXPECT_TRUE(rejects({"--dim-emb", "--resume"}, {"--dim-emb: missing value"}));
  EXPECT_TRUE(rejects({"--train-sets", "--resume"},
                      {"--train-sets: missing value; give it as --train-sets STRING..."}));
  EXPECT_TRUE(rejects({"-o"}, {"--output: missing value; give it as --output PATH"}));
  EXPECT_TRUE(rejects({"--config"}, {"--config: missing value; give it as --config FILE"}));
}

TEST(CliErrors, BadNumbers) {
  EXPECT_TRUE(rejects({"--dim-emb", "abc"}, {"--dim-emb: 'abc' is not an integer"}));
  EXPECT_TRUE(rejects({"--dim-emb", "12.5"}, {"--dim-emb: '12.5' is not an integer"}));
  EXPECT_TRUE(rejects({"--dim-emb", "12 "}, {"'12 ' is not an integer"}));
  EXPECT_TRUE(rejects({"--dim-emb="}, {"--dim-emb: '' is not an integer"}));
  EXPECT_TRUE(rejects({"--shift", "99999999999999999999"},
                      {"--shift: '99999999999999999999' does not fit a 64-bit integer"}));
  EXPECT_TRUE(rejects({"--learn-rate", "fast"}, {"--learn-rate: 'fast' is not a number"}));
  EXPECT_TRUE(rejects({"--learn-rate", "nan"}, {"--learn-rate: 'nan' is not a finite number"}));
  EXPECT_TRUE(rejects({"--learn-rate", "1e999"}, {"'1e999' is not a number"}));
}

TEST(CliErrors, OutOfRange) {
  EXPECT_TRUE(rejects({"--beam-size", "0"}, {"--beam-size 0: must be in [1, 1000]"}));
  EXPECT_TRUE(rejects({"-b", "1001"}, {"--beam-size 1001: must be in [1, 1000]"}));
  EXPECT_TRUE(rejects({"--label-smoothing", "1.5"}, {"--label-smoothing 1.5: must be in [0, 1]"}));
  EXPECT_TRUE(rejects({"--learn-rate", "-0.1"}, {"--learn-rate -0.1: must be >= 0"}));
}

// An integer flag's large bounds are written in digits, as a user types them.
TEST(CliErrors, IntegerRangesAreWrittenInDigits) {
  OptionSet set;
  set.add_int("mini-batch-words", 4096, "Token budget.").range(2, 1e9);
  set.add_int("seed", 1, "Seed.").range(0, 9.0e18);
  set.add_double("scale", 1, "Scale.").range(0, 1e9);
  EXPECT_TRUE(throws_with(
      [&] {
        set.parse(Args{"--mini-batch-words", "2000000000"});
      },
      {"--mini-batch-words 2000000000: must be in [2, 1000000000]"}));
  EXPECT_TRUE(throws_with(
      [&] {
        set.parse(Args{"--seed", "-1"});
      },
      {"--seed -1: must be in [0, 9000000000000000000]"}));
  EXPECT_TRUE(throws_with(
      [&] {
        set.parse(Args{"--scale", "2e9"});
      },
      {"--scale 2e9: must be in [0, 1e+09]"}));
}

TEST(CliErrors, EnumListsTheAllowedValues) {
  EXPECT_TRUE(rejects({"--type", "lstm"}, {"--type lstm: must be one of: transformer, s2s, rnn"}));
  EXPECT_TRUE(rejects({"--type", "Transformer"}, {"must be one of"}));  // case matters
}

TEST(CliErrors, BadSwitchValue) {
  EXPECT_TRUE(
      rejects({"--resume=maybe"}, {"--resume: 'maybe' is not a boolean; use true or false"}));
}

TEST(CliErrors, FlagGivenTwice) {
  EXPECT_TRUE(
      rejects({"--dim-emb", "1", "--dim-emb", "2"}, {"--dim-emb given twice; give it once"}));
  EXPECT_TRUE(rejects({"--resume", "--resume"}, {"--resume given twice"}));
  EXPECT_TRUE(rejects({"-b", "2", "--beam-size=3"},
                      {"--beam-size given twice (as -b and --beam-size); give it once"}));
}

TEST(CliErrors, PositionalsWhereNoneAreAllowed) {
  EXPECT_TRUE(rejects({"stray"}, {"unexpected argument 'stray': this command takes no "
                                  "positional arguments"}));
  EXPECT_TRUE(rejects(
      {"--resume", "true"},
      {"unexpected argument 'true': --resume is a switch and takes no value", "--resume=false"}));
  EXPECT_TRUE(rejects({"--beam-size", "4", "5"}, {"unexpected argument '5'"}));
}

TEST(CliErrors, RequiredOptionMissing) {
  OptionSet set = train_like();
  set.add_list("inputs", {}, "Files.").required();
  EXPECT_TRUE(throws_with([&] { set.parse(Args{"--resume"}); },
                          {"missing required option --inputs; give it on the command line "
                           "(--inputs STRING...) or as 'inputs:' in the config file"}));
}

TEST(CliErrors, ValidatorMessagesNameTheFlag) {
  EXPECT_TRUE(rejects({"--after", "5x"}, {"--after: '5x' is not a budget", "<N>u (updates)"}));
}

TEST(CliErrors, ErrorsRecordWhereTheyWereRaised) {
  try {
    train_like().parse(Args{"--nope"});
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.where().find(".cpp:"), std::string::npos) << e.where();
  }
}

}  // namespace
}  // namespace qkv::cli
