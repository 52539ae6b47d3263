// Values from the command line: defaults, every type, lists, switches, aliases,
// positionals, --help, and the declaration checks.
#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace qkv::cli {
namespace {

using test_util::throws_with;
using test_util::train_like;
using Args = std::vector<std::string>;
using Strings = std::vector<std::string>;

TEST(CliOptions, DefaultsWhenNothingIsGiven) {
  const OptionSet set = train_like();
  const ParsedOptions p = set.parse(Args{});
  EXPECT_EQ(p.get<int64_t>("dim-emb"), 512);
  EXPECT_EQ(p.get<double>("learn-rate"), 3e-4);
  EXPECT_EQ(p.get<std::string>("name"), "run");
  EXPECT_EQ(p.get<std::filesystem::path>("output"), std::filesystem::path("-"));
  EXPECT_FALSE(p.get<bool>("resume"));
  EXPECT_EQ(p.get_list("valid-metrics"), (Strings{"cross-entropy", "bleu"}));
  EXPECT_TRUE(p.get_list("train-sets").empty());
  EXPECT_EQ(p.get<std::string>("type"), "transformer");
  EXPECT_EQ(p.get<std::string>("after"), "0");
  for (const Option& o : set.options()) {
    EXPECT_FALSE(p.is_set(o.name())) << o.name();
    EXPECT_EQ(p.source(o.name()), Source::Default) << o.name();
  }
  EXPECT_FALSE(p.has("model"));  // declared without a default
  EXPECT_TRUE(p.has("dim-emb"));
  EXPECT_FALSE(p.help_requested());
  EXPECT_TRUE(p.positionals().empty());
}

TEST(CliOptions, EveryTypeFromTheCommandLine) {
  const ParsedOptions p = train_like().parse(
      Args{"--dim-emb", "256", "--learn-rate", "1e-3", "--name", "big run", "--model", "m.st",
           "--resume", "--train-sets", "a.en", "b.de", "--type", "s2s", "--after", "5e,30m"});
  EXPECT_EQ(p.get<int64_t>("dim-emb"), 256);
  EXPECT_EQ(p.get<double>("learn-rate"), 1e-3);
  EXPECT_EQ(p.get<std::string>("name"), "big run");
  EXPECT_EQ(p.get<std::filesystem::path>("model"), std::filesystem::path("m.st"));
  EXPECT_EQ(p.get<std::string>("model"), "m.st");
  EXPECT_TRUE(p.get<bool>("resume"));
  EXPECT_EQ(p.get<Strings>("train-sets"), (Strings{"a.en", "b.de"}));
  EXPECT_EQ(p.get<std::string>("type"), "s2s");
  EXPECT_EQ(parse_budget(p.get<std::string>("after")).to_string(), "5e,30m");
  EXPECT_TRUE(p.is_set("dim-emb"));
  EXPECT_EQ(p.source("dim-emb"), Source::CommandLine);
  EXPECT_FALSE(p.is_set("beam-size"));
}

TEST(CliOptions, EqualsFormAndNegativeNumbers) {
  const ParsedOptions p = train_like().parse(
      Args{"--dim-emb=128", "--shift", "-3", "--learn-rate=.5", "--name=-odd-", "--resume=no"});
  EXPECT_EQ(p.get<int64_t>("dim-emb"), 128);
  EXPECT_EQ(p.get<int64_t>("shift"), -3);  // "-3" is a value, not a flag
  EXPECT_EQ(p.get<double>("learn-rate"), 0.5);
  EXPECT_EQ(p.get<std::string>("name"), "-odd-");  // '=' takes anything
  EXPECT_FALSE(p.get<bool>("resume"));
  EXPECT_TRUE(p.is_set("resume"));
  EXPECT_EQ(train_like().parse(Args{"--shift=+7"}).get<int64_t>("shift"), 7);
}

TEST(CliOptions, ListsStopAtTheNextFlagAndReplaceTheDefault) {
  const ParsedOptions p = train_like().parse(
      Args{"--valid-metrics", "chrf", "--train-sets", "a", "-", "b", "-o", "out.txt"});
  EXPECT_EQ(p.get_list("valid-metrics"), (Strings{"chrf"}));
  EXPECT_EQ(p.get_list("train-sets"), (Strings{"a", "-", "b"}));  // "-" (stdin) is a value
  EXPECT_EQ(p.get<std::string>("output"), "out.txt");
  // With '=', exactly one element.
  EXPECT_EQ(train_like().parse(Args{"--train-sets=x y"}).get_list("train-sets"), (Strings{"x y"}));
}

TEST(CliOptions, RepeatableListsTakeOneValuePerOccurrence) {
  OptionSet set;
  set.add_list("ref", {}, "References.").repeatable().alias('r');
  set.add_int("beam-size", 4, "Beam.");
  set.allow_positionals("HYP", "The hypotheses.");
  const ParsedOptions p =
      set.parse(Args{"--ref", "a.de", "hyp.de", "-r", "b.de", "--beam-size", "2", "--ref=c d"});
  EXPECT_EQ(p.get_list("ref"), (Strings{"a.de", "b.de", "c d"}));  // in the order given
  EXPECT_EQ(p.positionals(), (Strings{"hyp.de"}));                 // never swallowed by --ref
  EXPECT_EQ(p.get<int64_t>("beam-size"), 2);
  EXPECT_EQ(p.source("ref"), Source::CommandLine);
  EXPECT_TRUE(throws_with([&] { set.parse(Args{"--ref"}); }, {"--ref: missing value"}));
  EXPECT_NE(set.format_help("qkv", "eval", "").find("repeatable"), std::string::npos);
  // Only a list can repeat: anything else given twice stays an error.
  EXPECT_TRUE(throws_with(
      [&] {
        set.parse(Args{"--beam-size", "1", "--beam-size", "2"});
      },
      {"--beam-size given twice"}));
  OptionSet bad;
  EXPECT_TRUE(throws_with<InternalError>([&] { bad.add_int("n", 1, "N.").repeatable(); },
                                         {"only a list option can be repeatable"}));
}

TEST(CliOptions, ShortAliases) {
  const ParsedOptions p = train_like().parse(Args{"-b", "12", "-m", "model.st", "-o", "x"});
  EXPECT_EQ(p.get<int64_t>("beam-size"), 12);
  EXPECT_EQ(p.get<std::string>("model"), "model.st");
  EXPECT_EQ(p.source("beam-size"), Source::CommandLine);
}

TEST(CliOptions, RangesIncludeTheirEnds) {
  OptionSet set = train_like();
  EXPECT_EQ(set.parse(Args{"--beam-size", "1"}).get<int64_t>("beam-size"), 1);
  EXPECT_EQ(set.parse(Args{"--beam-size", "1000"}).get<int64_t>("beam-size"), 1000);
  EXPECT_EQ(set.parse(Args{"--label-smoothing", "0"}).get<double>("label-smoothing"), 0.0);
  EXPECT_EQ(set.parse(Args{"--label-smoothing", "1"}).get<double>("label-smoothing"), 1.0);
  EXPECT_EQ(set.parse(Args{"--learn-rate", "1e30"}).get<double>("learn-rate"), 1e30);
}

TEST(CliOptions, EnumAcceptsEveryChoice) {
  for (const std::string c : {"transformer", "s2s", "rnn"})
    EXPECT_EQ(train_like().parse(Args{"--type", c}).get<std::string>("type"), c);
}

TEST(CliOptions, PositionalsWhenAllowed) {
  OptionSet set = train_like();
  set.allow_positionals("FILE", "Files to score.");
  const ParsedOptions p = set.parse(Args{"a.txt", "--beam-size", "3", "-", "--", "--resume"});
  EXPECT_EQ(p.positionals(), (Strings{"a.txt", "-", "--resume"}));  // after --: positional
  EXPECT_EQ(p.get<int64_t>("beam-size"), 3);
  EXPECT_FALSE(p.get<bool>("resume"));
}

TEST(CliOptions, HelpSkipsEveryOtherCheck) {
  OptionSet set = train_like();
  set.add_int("required-one", std::nullopt, "Must be given.").required();
  for (const Args& args : {Args{"--help"}, Args{"-h"}, Args{"--dim-embd", "x", "-h"}}) {
    const ParsedOptions p = set.parse(args);
    EXPECT_TRUE(p.help_requested());
    EXPECT_EQ(p.get<int64_t>("dim-emb"), 512);
  }
  // After "--" it is a positional, not a request for help.
  EXPECT_TRUE(throws_with([&] { set.parse(Args{"--", "-h"}); }, {"unexpected argument '-h'"}));
}

TEST(CliOptions, ArgcArgvSkipsTheProgramName) {
  const char* argv[] = {"train", "--dim-emb", "64", "--resume"};
  const ParsedOptions p = train_like().parse(4, argv);
  EXPECT_EQ(p.get<int64_t>("dim-emb"), 64);
  EXPECT_TRUE(p.get<bool>("resume"));
  EXPECT_FALSE(train_like().parse(0, nullptr).is_set("dim-emb"));
}

TEST(CliOptions, RequiredOptionGivenOnTheCommandLine) {
  OptionSet set = train_like();
  set.add_list("inputs", {}, "Files.").required();
  EXPECT_EQ(set.parse(Args{"--inputs", "x"}).get_list("inputs"), (Strings{"x"}));
}

TEST(CliOptions, GettersRejectWrongTypesAndUnknownNames) {
  const ParsedOptions p = train_like().parse(Args{});
  EXPECT_TRUE(throws_with<InternalError>([&] { p.get<double>("dim-emb"); },
                                         {"get<double>(\"dim-emb\")", "int64"}));
  EXPECT_TRUE(
      throws_with<InternalError>([&] { p.get<int64_t>("dim-embd"); }, {"no such option declared"}));
  EXPECT_TRUE(
      throws_with<InternalError>([&] { p.get<std::string>("model"); }, {"has no value", "has()"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { p.get<std::filesystem::path>("name"); },
                                         {"get<path>(\"name\")", "string"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { p.get_list("type"); }, {"enum"}));
}

TEST(CliOptions, BadDeclarationsAreInternalErrors) {
  OptionSet set;
  EXPECT_TRUE(throws_with<InternalError>([&] { set.add_int("Dim_Emb", 1, ""); }, {"kebab-case"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { set.add_int("dim--emb", 1, ""); }, {"kebab"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { set.add_switch("config", ""); },
                                         {"--config declared twice"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { set.add_string("s", "x", "").range(0, 1); },
                                         {"only numbers have a range"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { set.add_int("n", 0, "").range(1, 9); },
                                         {"--n: default 0 outside [1, 9]"}));
  EXPECT_TRUE(throws_with<InternalError>(
      [&] {
        set.add_enum("e", {"a", "b"}, "c", "");
      },
      {"--e: default 'c' is not one of: a, b"}));
  EXPECT_TRUE(
      throws_with<InternalError>([&] { set.add_validated("after", "5x", budget_validator(), ""); },
                                 {"invalid default", "--after: '5x' is not a budget"}));
  EXPECT_TRUE(throws_with<InternalError>([&] { set.add_int("m", 1, "").alias('1'); },
                                         {"must be a letter"}));
  set.add_int("count", 1, "").alias('c');  // -c is --config's
  EXPECT_TRUE(throws_with<InternalError>(
      [&] { set.parse(Args{}); }, {"short alias -c declared for both --config and --count"}));
}

}  // namespace
}  // namespace qkv::cli
