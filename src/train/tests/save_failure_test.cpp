// A full disk during a checkpoint: with ENOSPC injected at every low-level write step of a
// save (io::testing::FailNthWrite, one step per attempt: create, each write(2), fsync,
// close, rename, open and fsync of the directory, for train_state.safetensors and then
// model.safetensors), the save throws an IoError naming the file, the reason and what to
// do; every file of the model directory stays whole and loads; train_state.safetensors
// is never older than model.safetensors; no temporary file is left behind; and the run
// resumes from what is there.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>

#include "pipeline_test_util.h"
#include "qkv/base/thread_pool.h"
#include "qkv/io/fault_injection.h"
#include "qkv/train/checkpoint.h"
#include "qkv/train/trainer.h"

namespace qkv::train {
namespace {

namespace fs = std::filesystem;
using testing::parameter_values;
using testing::test_dir;

constexpr int64_t kSavedAt = 3;  // the checkpoint that must survive
constexpr int64_t kNextAt = 6;   // the save that fails

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void overwrite(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// The model directory's two checkpoint files.
struct Checkpoint {
  std::string state, model;
};
Checkpoint read_checkpoint(const fs::path& dir) {
  return {slurp(dir / kTrainStateFile), slurp(dir / kModelFile)};
}

// Where one failed save left the directory.
enum class Outcome {
  BothPrevious,  // failed before train_state.safetensors was renamed
  StateNew,      // train_state renamed (its directory fsync or model.safetensors failed)
  BothNew,       // only model.safetensors' directory fsync failed
};

// `max_write` > 0 caps every write(2) (io::testing::ShortWrites) so that a save takes
// many write steps and failures land in the middle of a tensor; 0: natural writes.
class SaveFailureTest : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    set_num_threads(1);
    dir_ = test_dir();
    fs::create_directories(dir_ / "data");
    data_.emplace(testing::tiny_task(dir_ / "data"));
    model_dir_ = dir_ / "model";
    Trainer first(testing::tiny_rnn(data_->vocab.size(), 0.0), *data_,
                  testing::tiny_options(model_dir_, kSavedAt));
    first.run();
    previous_ = read_checkpoint(model_dir_);
    // What the save at kNextAt writes when nothing fails (resume is bit-exact).
    const fs::path ref_dir = dir_ / "reference";
    fs::copy(model_dir_, ref_dir);
    Trainer ref = Trainer::resume(*data_, testing::tiny_options(ref_dir, kNextAt));
    ref.run();
    next_ = read_checkpoint(ref_dir);
    next_params_ = parameter_values(ref.model());
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // Which version each file holds; fails the test if a file is neither (torn) or the
  // pair is inconsistent (model.safetensors newer than the train state).
  Outcome classify(const Checkpoint& now) {
    const bool state_previous = now.state == previous_.state;
    const bool model_previous = now.model == previous_.model;
    EXPECT_TRUE(model_previous || now.model == next_.model) << "model.safetensors is torn";
    if (!state_previous) {
      // The new train state: its wall-time counter differs from the reference run's, so
      // compare what it restores.
      const RestoredTraining r = load_train_state(model_dir_ / kTrainStateFile, AdamOptions{});
      EXPECT_EQ(r.progress.update, kNextAt);
      EXPECT_EQ(parameter_values(*r.model), next_params_);
    }
    EXPECT_FALSE(state_previous && !model_previous)
        << "model.safetensors is newer than train_state.safetensors";
    if (state_previous) return Outcome::BothPrevious;
    return model_previous ? Outcome::StateNew : Outcome::BothNew;
  }

  fs::path dir_, model_dir_;
  std::optional<TrainingData> data_;
  Checkpoint previous_, next_;
  std::vector<float> next_params_;
};

TEST_P(SaveFailureTest, EveryFailedWriteStepKeepsTheCheckpointWholeAndSaysWhatToDo) {
  const size_t max_write = GetParam();
  const std::vector<std::string> files = {kModelFile, kTrainStateFile, kVocabFile};
  std::map<Outcome, int> outcomes;
  int64_t failed = 0;
  for (int64_t n = 1;; ++n) {
    ASSERT_LE(n, 10000) << "the save never succeeded";
    SCOPED_TRACE("write step " + std::to_string(n) + " fails");
    // Resuming loads the surviving checkpoint: it must be whole.
    Trainer trainer = Trainer::resume(*data_, testing::tiny_options(model_dir_, kNextAt));
    ASSERT_EQ(trainer.progress().update, kSavedAt);
    std::string message;
    bool triggered = false;
    {
      std::optional<io::testing::ShortWrites> short_writes;
      if (max_write > 0) short_writes.emplace(max_write);
      io::testing::FailNthWrite fail(n);
      try {
        trainer.run();  // 3 updates, then the checkpoint: its save is the only writer
      } catch (const IoError& e) {
        message = e.what();
      }
      triggered = fail.triggered();
    }
    if (!triggered) {
      EXPECT_EQ(message, "");
      EXPECT_EQ(read_checkpoint(model_dir_).model, next_.model);
      failed = n - 1;
      break;
    }
    ASSERT_NE(message, "") << "the save did not report the failed write";
    EXPECT_EQ(entries(model_dir_), files) << "a temporary file was left behind";
    const Outcome outcome = classify(read_checkpoint(model_dir_));
    ++outcomes[outcome];
    // Names the file being written (train_state first, so a failure that leaves both
    // files previous is in its save), what happened, that the checkpoint is whole, and
    // the way on.
    const auto names = [&](const char* name) {
      return message.find("'" + (model_dir_ / name).string() + "'") != std::string::npos;
    };
    EXPECT_NE(names(kTrainStateFile), names(kModelFile)) << message;
    if (outcome == Outcome::BothPrevious) {
      EXPECT_TRUE(names(kTrainStateFile)) << message;
    }
    if (outcome == Outcome::BothNew) {
      EXPECT_TRUE(names(kModelFile)) << message;
    }
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
    EXPECT_NE(message.find("the last checkpoint in " + model_dir_.string() + " is intact"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("free disk space"), std::string::npos) << message;
    EXPECT_NE(message.find("rerun with resume"), std::string::npos) << message;
    overwrite(model_dir_ / kTrainStateFile, previous_.state);
    overwrite(model_dir_ / kModelFile, previous_.model);
  }
  // Per file: create, >= 1 write, fsync, close, rename before the rename; the directory's
  // open and fsync after it.
  EXPECT_GE(outcomes[Outcome::BothPrevious], 5);
  EXPECT_GE(outcomes[Outcome::StateNew], 7);
  EXPECT_EQ(outcomes[Outcome::BothNew], 2);
  ::testing::Test::RecordProperty("write_steps", std::to_string(failed));
  std::cout << "[ figures  ] a save of the tiny checkpoint"
            << (max_write > 0 ? " in " + std::to_string(max_write) + "-byte writes" : "")
            << ": a failure injected at each of its " << failed << " write steps; checkpoint whole "
            << failed << "/" << failed << " (both files the previous ones byte for byte "
            << outcomes[Outcome::BothPrevious] << ", new train state + previous model "
            << outcomes[Outcome::StateNew] << ", both new " << outcomes[Outcome::BothNew]
            << "); no temporary file left\n";
}

INSTANTIATE_TEST_SUITE_P(WriteSizes, SaveFailureTest, ::testing::Values(size_t{0}, size_t{4096}),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                           return param.param == 0 ? std::string("NaturalWrites")
                                                   : "CappedAt" + std::to_string(param.param);
                         });

}  // namespace
}  // namespace qkv::train
