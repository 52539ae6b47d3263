// One training session from `qkv train`'s options, as the CLI and the Python module run
// it: the hooks fire (every update, the loop bracketed once), a stop request ends the run
// after the current update with the checkpoint saved, resume continues from it, and
// options that do not fit together are refused before any work.
#include "qkv/experiment/train_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "qkv/base/error.h"
#include "qkv/experiment/settings.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/train/checkpoint.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

class TrainSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("qkv_train_session." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream src(dir_ / "train.src"), tgt(dir_ / "train.tgt");
    for (int i = 0; i < 60; ++i) {
      src << "the dog " << (i % 7) << " runs\n";
      tgt << "der hund " << (i % 7) << " lauft\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  cli::ParsedOptions options(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"--model",
                                     (dir_ / "model").string(),
                                     "--train-sets",
                                     (dir_ / "train.src").string(),
                                     (dir_ / "train.tgt").string(),
                                     "--vocab-size",
                                     "27",
                                     "--type",
                                     "rnn",
                                     "--attention",
                                     "dot",
                                     "--dim-emb",
                                     "8",
                                     "--dim-rnn",
                                     "8",
                                     "--mini-batch-words",
                                     "200",
                                     "--disp-freq",
                                     "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return train_options().parse(args);
  }

  fs::path dir_;
};

TEST_F(TrainSessionTest, HooksFireAndAStopRequestSavesThenResumeContinues) {
  std::atomic<bool> stop{false};
  std::vector<int64_t> updates;
  int before = 0, after = 0;
  TrainingHooks hooks{.stop_requested = &stop,
                      .on_update =
                          [&](const train::UpdateRecord& r) {
                            updates.push_back(r.update);
                            if (r.update == 2) stop.store(true);
                          },
                      .before_loop = [&] { ++before; },
                      .after_loop = [&] { ++after; }};
  const train::TrainSummary s = run_training_session(options({"--after", "6u"}), hooks);
  EXPECT_EQ(s.reason, train::StopReason::Interrupted);
  EXPECT_EQ(s.progress.update, 2);
  EXPECT_EQ(updates, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(before, 1);
  EXPECT_EQ(after, 1);
  EXPECT_TRUE(fs::exists(dir_ / "model" / train::kTrainStateFile));
  EXPECT_TRUE(fs::exists(dir_ / "model" / "train.yml"));

  // Without --resume the saved run is refused; with it, training continues at update 3.
  EXPECT_THROW(run_training_session(options({"--after", "6u"}), {}), ConfigError);
  updates.clear();
  stop.store(false);
  const train::TrainSummary r = run_training_session(
      options({"--after", "4u", "--resume"}),
      {.on_update = [&](const train::UpdateRecord& u) { updates.push_back(u.update); }});
  EXPECT_EQ(r.reason, train::StopReason::Updates);
  EXPECT_EQ(updates, (std::vector<int64_t>{3, 4}));
}

// The message of the ConfigError `p` raises, "" when it raises none.
std::string config_error(const cli::ParsedOptions& p) {
  try {
    run_training_session(p, {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_F(TrainSessionTest, OptionsThatDoNotFitAreRefusedBeforeAnyWork) {
  EXPECT_NE(config_error(options({"--valid-sets", (dir_ / "train.src").string()}))
                .find("--valid-sets takes two files"),
            std::string::npos);
  EXPECT_NE(config_error(options({"--max-length", "300"}))
                .find("--mini-batch-words 200 must be at least --max-length + 1"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "model"));  // nothing written, no vocabulary trained
}

// Checks of the trainer and the data below the flag layer name fields; the session, given
// flags, names the flags.
TEST_F(TrainSessionTest, LibraryChecksNameTheFlags) {
  EXPECT_NE(config_error(options({"--max-length", "2", "--after", "1u"}))
                .find("; raise --max-length or check the training files"),
            std::string::npos);
  std::ofstream(dir_ / "blank.src") << "\n\n";
  std::ofstream(dir_ / "blank.tgt") << "\n\n";
  const std::string blank = config_error(options({"--valid-sets", (dir_ / "blank.src").string(),
                                                  (dir_ / "blank.tgt").string(), "--after", "1u"}));
  EXPECT_EQ(blank.find("no validation pair left: "), 0u) << blank;
  EXPECT_NE(blank.find("; check --valid-sets"), std::string::npos);
}

// The session trains with the standard validators (validators.h), as every front end
// does: BLEU in each validation line, the best model kept beside the last one.
TEST_F(TrainSessionTest, ValidationMeasuresBleuAndKeepsTheBestModel) {
  EXPECT_EQ(trainer_options(TrainSettings{}, "unused").validation_observers.size(), 2u);
  std::ostringstream log;
  const train::TrainSummary s = run_training_session(
      options({"--valid-sets", (dir_ / "train.src").string(), (dir_ / "train.tgt").string(),
               "--valid-freq", "2", "--after", "4u"}),
      {.log = &log});
  const std::string text = log.str();
  EXPECT_NE(text.find("validation 1 at up 2: cross-entropy "), std::string::npos) << text;
  EXPECT_NE(text.find(", BLEU "), std::string::npos) << text;
  EXPECT_NE(text.find(" (new best, saved model.best.safetensors)"), std::string::npos) << text;
  EXPECT_NE(text.find("best validation cross-entropy "), std::string::npos) << text;
  ASSERT_TRUE(s.last_validation.has_value());
  EXPECT_TRUE(s.last_validation->bleu.has_value());
  EXPECT_TRUE(fs::exists(dir_ / "model" / train::kBestModelFile));
}

}  // namespace
}  // namespace qkv::experiment
