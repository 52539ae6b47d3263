// The library's checks below the flag layer (train, data) name the fields they reject;
// the CLI (and the flag layer `qkv train` and Python share) names each by its flag. One
// check of each family, rendered as the CLI renders it (cli::flag_message, what
// run_guarded and run_training_session use).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qkv/base/field_error.h"
#include "qkv/cli/field_names.h"
#include "qkv/data/batcher.h"
#include "qkv/data/vocab.h"
#include "qkv/train/clip.h"
#include "qkv/train/memory.h"
#include "qkv/train/schedule.h"
#include "qkv/train/trainer.h"

namespace qkv {
namespace {

// The message of the field error `fn` throws as the CLI shows it; "" when none.
std::string as_cli_shows(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    const auto* fields = dynamic_cast<const FieldMessage*>(&e);
    return fields != nullptr ? cli::flag_message(*fields)
                             : std::string("not a field error: ") + e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

TEST(FieldFlags, TheTrainersOptionsNameTheirFlags) {
  train::TrainerOptions o;
  EXPECT_EQ(as_cli_shows([&] { train::check_options(o); }),
            "--model: no model directory given");  // TrainerOptions::model_dir
  o.model_dir = "unused";
  o.label_smoothing = 1;
  EXPECT_EQ(as_cli_shows([&] { train::check_options(o); }),
            "--label-smoothing 1 must be in [0, 1)");
  o.label_smoothing = 0;
  o.early_stopping = -2;
  EXPECT_EQ(as_cli_shows([&] { train::check_options(o); }),
            "--early-stopping -2 must be >= 0 (0 turns it off)");
}

TEST(FieldFlags, TheScheduleAndClippingNameTheFlagsThatSetThem) {
  EXPECT_EQ(as_cli_shows([] { train::validate({.learning_rate = 0}); }),
            "--learn-rate 0 must be finite and > 0 (e.g. 3e-4)");
  EXPECT_NE(as_cli_shows([] {
              train::validate({.kind = train::LrSchedule::InvSqrt, .warmup = 0});
            }).find("give --warmup >= 1 updates (e.g. 4000), or use --lr-schedule constant"),
            std::string::npos);
  std::vector<float> g = {1};
  EXPECT_TRUE(starts_with(as_cli_shows([&] { train::clip_by_global_norm(g, 0); }),
                          "--clip-norm 0 must be finite"));
  train::NonFiniteGuard guard(1);
  EXPECT_NE(as_cli_shows([&] {
              guard.admit(false, 1);
            }).find("Try a lower --learn-rate, a longer --warmup, clipping with --clip-norm"),
            std::string::npos);
}

TEST(FieldFlags, BatchingAndMemoryNameTheFlagsToChange) {
  auto corpus = std::make_shared<data::TokenizedCorpus>();
  corpus->source = {{4, 5}};
  corpus->target = {{6}};
  corpus->stats.read = corpus->stats.kept = 1;
  EXPECT_TRUE(
      starts_with(as_cli_shows([&] { data::BatchIterator(corpus, {.mini_batch_words = 0}, 1); }),
                  "--mini-batch-words must be > 0"));
  EXPECT_NE(as_cli_shows([&] {
              data::BatchIterator(corpus, {.max_length = 1}, 1);
            }).find("; raise --max-length or check the training files"),
            std::string::npos);
  // The default Transformer (8000 pieces) on a million sentences of 1000 tokens.
  EXPECT_NE(as_cli_shows([] {
              train::check_training_memory({}, {1000000, 1000, 1000});
            }).find("reduce --mini-batch-words (fewer sentences per batch) or --max-length"),
            std::string::npos);
}

// The validation set's check is run end to end in train_session_test.cpp.
TEST(FieldFlags, TrainingAVocabularyNamesItsFlags) {
  EXPECT_TRUE(starts_with(as_cli_shows([] { data::train_vocab({"unused.txt"}, 4, "unused.spm"); }),
                          "--vocab-size must be > 4"));
}

}  // namespace
}  // namespace qkv
