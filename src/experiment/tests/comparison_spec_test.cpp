// The typed options at the flag boundary: what the flags give equals what C++ builds (so
// each default lives in one place), the demo's documented settings, and field errors,
// which name the field in the library and the flag once the CLI's layer renders them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "qkv/base/field_error.h"
#include "qkv/cli/field_names.h"
#include "qkv/experiment/comparison_flags.h"
#include "qkv/experiment/demo.h"
#include "qkv/experiment/train_flags.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

ComparisonSpec spec_from(std::vector<std::string> args) {
  return comparison_spec_from(comparison_options().parse(args), "qkv compare ...");
}

std::vector<std::string> data_flags() {
  return {"--train-sets", "a.en", "a.de", "--test-sets", "t.en", "t.de"};
}

ComparisonSpec with_data(ComparisonSpec s) {
  s.train_sets = {"a.en", "a.de"};
  s.test_sets = {"t.en", "t.de"};
  s.command = "qkv compare ...";
  return s;
}

template <class E = ConfigError>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainFlags, DefaultToTheTypedSettingsDefaults) {
  const cli::ParsedOptions p =
      train_options().parse({"--model", "m", "--train-sets", "a.en", "a.de"});
  EXPECT_TRUE(model_settings_from(p) == ModelSettings{});
  EXPECT_TRUE(train_settings_from(p) == TrainSettings{});
}

TEST(TrainFlags, GiveTheSettingsTheyName) {
  const cli::ParsedOptions p = train_options().parse({"--model",
                                                      "m",
                                                      "--train-sets",
                                                      "a.en",
                                                      "a.de",
                                                      "--type",
                                                      "rnn",
                                                      "--attention",
                                                      "dot",
                                                      "--enc-depth",
                                                      "2",
                                                      "--dim-rnn",
                                                      "64",
                                                      "--lr-schedule",
                                                      "constant",
                                                      "--after",
                                                      "3e",
                                                      "--disp-seconds",
                                                      "0",
                                                      "--exchange-overlap",
                                                      "off"});
  ModelSettings m;
  m.type = models::ModelType::Rnn;
  m.attention = models::AttentionKind::Dot;
  m.enc_depth = 2;
  m.dim_rnn = 64;
  EXPECT_TRUE(model_settings_from(p) == m);
  TrainSettings t;
  t.lr_schedule = train::LrSchedule::Constant;
  t.after = "3e";
  t.disp_seconds = 0;
  t.exchange_overlap = false;
  EXPECT_TRUE(train_settings_from(p) == t);
}

TEST(ComparisonFlags, DefaultToTheSpecsDefaults) {
  const ComparisonSpec s = spec_from(data_flags());
  EXPECT_TRUE(s == with_data(ComparisonSpec{}));
  EXPECT_EQ(s.train.after, kDefaultComparisonBudget);  // not `qkv train`'s 20e
  EXPECT_EQ(s.variants.size(), 4u);
}

TEST(ComparisonFlags, GiveTheSpecBuiltInCxx) {
  std::vector<std::string> args = data_flags();
  args.insert(args.end(), {"--valid-sets",
                           "v.en",
                           "v.de",
                           "--variants",
                           "rnn:none,transformer:h2",
                           "--dim-emb",
                           "64",
                           "--after",
                           "30u",
                           "--beam-size",
                           "3",
                           "--report",
                           "--no-entropy",
                           "--out",
                           "dir",
                           "--max-sentences",
                           "9",
                           "--seed",
                           "7",
                           "--bootstrap",
                           "0",
                           "--vocab",
                           "v.spm"});
  ComparisonSpec expected = with_data({});
  expected.valid_sets = CorpusFiles{"v.en", "v.de"};
  expected.variants = parse_variants("rnn:none,transformer:h2");
  expected.model.dim_emb = 64;
  expected.train.after = "30u";
  expected.train.seed = 7;
  expected.search.beam_size = 3;
  expected.report = true;
  expected.entropy = false;
  expected.out = "dir";
  expected.max_sentences = 9;
  expected.bootstrap = 0;
  expected.vocab = fs::path("v.spm");
  EXPECT_TRUE(spec_from(args) == expected);
  // The search group's short form works here as in translate.
  args.insert(args.end(), {"-b", "7"});
  args.erase(std::find(args.begin(), args.end(), "--beam-size"),
             std::find(args.begin(), args.end(), "--beam-size") + 2);
  expected.search.beam_size = 7;
  EXPECT_TRUE(spec_from(args) == expected);
}

TEST(ComparisonFlags, RefuseWhatCompareSetsPerVariant) {
  const auto refused = [](std::vector<std::string> extra) {
    std::vector<std::string> args = data_flags();
    args.insert(args.end(), extra.begin(), extra.end());
    return error_of([&] { spec_from(args); });
  };
  EXPECT_NE(refused({"--model", "m"}).find("--model: compare writes each variant's model"),
            std::string::npos);
  EXPECT_NE(refused({"--type", "rnn"}).find("--type: compare sets each model's type"),
            std::string::npos);
  EXPECT_NE(refused({"--resume"}).find("drop --resume"), std::string::npos);
  EXPECT_NE(refused({"--test-sets", "x"}).find("given twice"), std::string::npos);
  EXPECT_NE(error_of([] {
              spec_from({"--train-sets", "a", "--test-sets", "t.en", "t.de"});
            }).find("--train-sets takes two files (source and target), got 1"),
            std::string::npos);
}

TEST(ComparisonCheck, ErrorsNameTheFieldAndTheCliShowsTheFlag) {
  ComparisonSpec s = with_data({});
  s.variants = parse_variants("rnn:none,transformer:h3");
  s.model.dim_emb = 16;
  try {
    check(s);
    FAIL() << "no error";
  } catch (const FieldError& e) {
    EXPECT_STREQ(e.what(), "heads 3 must divide dim_emb 16");
    EXPECT_EQ(cli::flag_message(e), "--heads 3 must divide --dim-emb 16");
  }
  s = with_data({});
  s.variants = parse_variants("rnn:none");
  s.model.input_feeding = true;
  EXPECT_EQ(error_of<FieldError>([&] { check(s); }),
            "input_feeding needs type rnn with attention dot, scaled-dot, cosine or general");
  s = with_data({});
  s.train.max_length = 5000;
  EXPECT_EQ(error_of<FieldError>([&] { check(s); })
                .find("mini_batch_words 4096 must be at least "
                      "max_length + 1"),
            0u);
  s = with_data({});
  s.train.after = "soon";
  EXPECT_EQ(error_of<FieldError>([&] { check(s); }).find("after: 'soon' is not a budget"), 0u);
  s = with_data({});
  s.test_sets = {};
  EXPECT_EQ(error_of<FieldError>([&] { check(s); }).find("test_sets: "), 0u);
  s = with_data({});
  s.variants.clear();
  EXPECT_EQ(error_of<FieldError>([&] { check(s); }).find("variants: no variants"), 0u);
  EXPECT_NO_THROW(check(with_data({})));
}

TEST(ComparisonCheck, TheTrainFlagsLayerShowsFlagNames) {
  // What `qkv train` and Python's qkv.train see: the same check, named by flag.
  const cli::ParsedOptions p =
      train_options().parse({"--model", "m", "--train-sets", "a.en", "a.de", "--heads", "3"});
  const std::string message = error_of([&] { model_config_from(p, 100); });
  EXPECT_EQ(message, "--heads 3 must divide --dim-emb 256");
}

class DemoSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("qkv_demo_spec." + std::to_string(getpid()));
    fs::create_directories(dir_);
    for (const char* f :
         {"train.en.gz", "train.de.gz", "test_2016_flickr.en.gz", "test_2016_flickr.de.gz"})
      std::ofstream(dir_ / f) << "";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DemoSpec, HasTheDocumentedSettings) {
  const ComparisonSpec s = demo_spec({.data = dir_});
  EXPECT_EQ(s.train_sets, (CorpusFiles{dir_ / "train.en.gz", dir_ / "train.de.gz"}));
  EXPECT_EQ(s.test_sets,
            (CorpusFiles{dir_ / "test_2016_flickr.en.gz", dir_ / "test_2016_flickr.de.gz"}));
  EXPECT_FALSE(s.valid_sets.has_value());
  EXPECT_EQ(s.variants, parse_variants(kDemoVariants));
  // 90% of 15 minutes less 20 s of setup, a third each.
  EXPECT_EQ(s.train.after, "263s");
  EXPECT_EQ(s.train.threads, 2);
  EXPECT_EQ(s.train.vocab_size, 4000);
  EXPECT_EQ(s.model.dim_emb, 128);
  EXPECT_EQ(s.model.dim_rnn, 128);
  EXPECT_EQ(s.model.dim_ffn, 512);
  EXPECT_EQ(s.model.heads, 4);
  EXPECT_EQ(s.model.dropout, 0);
  EXPECT_EQ(s.train.mini_batch_words, 2048);
  EXPECT_EQ(s.train.learn_rate, 0.002);
  EXPECT_EQ(s.train.lr_schedule, train::LrSchedule::Constant);
  EXPECT_EQ(s.train.warmup, 100);
  EXPECT_EQ(s.train.disp_freq, 25);
  EXPECT_EQ(s.train.save_freq, 0);
  EXPECT_EQ(s.train.valid_freq, 0);
  EXPECT_EQ(s.search.beam_size, 5);
  EXPECT_TRUE(s.report);
  EXPECT_TRUE(s.overwrite);
  EXPECT_EQ(s.out, fs::path("qkv-demo"));
  EXPECT_NO_THROW(check(s));
}

TEST_F(DemoSpec, TakesTheSearchItIsGiven) {
  const ComparisonSpec s = demo_spec({.data = dir_, .beam_size = 1, .normalize = 1.0});
  EXPECT_TRUE(s.search == (SearchSettings{.beam_size = 1, .normalize = 1.0}));
  // Its defaults are compare's: the same search, whichever command runs it.
  EXPECT_TRUE(demo_spec({.data = dir_}).search == ComparisonSpec{}.search);
}

TEST_F(DemoSpec, ASmokeTestShrinksTheVocabularyAndTheSetup) {
  const ComparisonSpec s = demo_spec({.minutes = 1, .data = dir_, .max_sentences = 60});
  EXPECT_EQ(s.max_sentences, 60);
  EXPECT_EQ(s.train.vocab_size, 100);
  EXPECT_EQ(s.train.after, "17s");  // (54 s - 2 s) / 3
}

TEST_F(DemoSpec, AMissingCorpusNamesTheDataField) {
  fs::remove(dir_ / "test_2016_flickr.de.gz");
  try {
    demo_spec({.data = dir_});
    FAIL() << "no error";
  } catch (const FieldIoError& e) {
    EXPECT_EQ(std::string(e.what()).find("data " + dir_.string() + ": no test_2016_flickr.de.gz"),
              0u);
    EXPECT_EQ(cli::flag_message(e).find("--data " + dir_.string()), 0u);
  }
}

}  // namespace
}  // namespace qkv::experiment
