// The training loop end to end on a tiny synthetic task: bit-exact resume, non-finite
// updates skipped and counted, divergence stops with a message, a tiny model learns,
// validation and early stopping, the files of the model directory.
#include "qkv/train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "../detail/dropout_state.h"
#include "pipeline_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::train {
namespace {

using testing::parameter_values;
using testing::test_dir;
using testing::throws_with;

// One training task shared by the tests of this file (the vocabulary takes a moment).
class TrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_num_threads(2);  // results do not depend on it; fixed anyway, as the issue asks
    dir_ = new std::filesystem::path(std::filesystem::path(::testing::TempDir()) /
                                     ("qkv_trainer_data." + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_);
    data_ = new TrainingData(testing::tiny_task(*dir_));
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete data_;
    delete dir_;
  }
  static int64_t vocab() { return data_->vocab.size(); }

  static std::filesystem::path* dir_;
  static TrainingData* data_;
};
std::filesystem::path* TrainerTest::dir_ = nullptr;
TrainingData* TrainerTest::data_ = nullptr;

struct RunLog {
  std::vector<double> losses;
  std::vector<bool> applied;
  std::vector<float> params;
  std::vector<float> first_moment;
};

// Runs `trainer` to its budget, appending what happened to `run`.
void run_into(Trainer& trainer, RunLog& run) {
  trainer.run();
  run.params = parameter_values(trainer.model());
  const auto m = trainer.optimizer().first_moment();
  run.first_moment.assign(m.begin(), m.end());
}

TrainerOptions recording(TrainerOptions o, RunLog& run) {
  o.on_update = [&run](const UpdateRecord& r) {
    run.losses.push_back(r.loss);
    run.applied.push_back(r.applied);
  };
  return o;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// 10 updates straight == 5 updates, stop, a new Trainer resumes from the directory, 5 more:
// bitwise equal losses, parameters and moments. Validation runs inside both (every 3
// updates) and must not disturb anything.
void expect_bit_exact_resume(const models::ModelConfig& config, const TrainingData& data) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir / "straight", 10);
  o.valid_freq = 3;
  RunLog straight;
  Trainer a(config, data, recording(o, straight));
  run_into(a, straight);

  RunLog split;
  o.model_dir = dir / "split";
  o.after.updates = 5;
  {
    Trainer first(config, data, recording(o, split));
    first.run();
  }
  ASSERT_TRUE(std::filesystem::exists(dir / "split" / kTrainStateFile));
  o.after.updates = 10;
  Trainer second = Trainer::resume(data, recording(o, split));
  EXPECT_EQ(second.progress().update, 5);
  run_into(second, split);

  ASSERT_EQ(straight.losses.size(), 10u);
  EXPECT_TRUE(same_bits(straight.losses, split.losses));
  for (size_t i = 0; i < straight.losses.size(); ++i)
    EXPECT_EQ(straight.losses[i], split.losses[i]) << "update " << i + 1;
  EXPECT_TRUE(same_bits(straight.params, split.params));
  EXPECT_TRUE(same_bits(straight.first_moment, split.first_moment));
  EXPECT_EQ(a.progress().position.epoch, second.progress().position.epoch);
  EXPECT_EQ(a.progress().position.index, second.progress().position.index);
  EXPECT_EQ(a.progress().validations, second.progress().validations);
  EXPECT_EQ(a.progress().best_valid_loss, second.progress().best_valid_loss);
}

TEST_F(TrainerTest, ResumeIsBitExactWithoutDropout) {
  expect_bit_exact_resume(testing::tiny_transformer(vocab(), 0.0), *data_);
}

TEST_F(TrainerTest, ResumeIsBitExactWithDropout) {
  if (!detail::kModelsExposeDropoutState)
    GTEST_SKIP() << "models::Seq2Seq does not expose dropout_offsets() yet";
  expect_bit_exact_resume(testing::tiny_transformer(vocab(), 0.2), *data_);
  expect_bit_exact_resume(testing::tiny_rnn(vocab(), 0.2), *data_);
}

// The checkpoint helpers pick up a model's dropout counters through the interface that
// Seq2Seq is to expose (dropout_offsets / set_dropout_offsets).
struct ModelWithDropoutState {
  std::vector<uint64_t> offsets = {7, 11};
  std::vector<uint64_t> dropout_offsets() const { return offsets; }
  void set_dropout_offsets(std::span<const uint64_t> o) { offsets.assign(o.begin(), o.end()); }
};
struct ModelWithoutDropoutState {};

TEST(DropoutState, IsSavedAndRestoredWhenTheModelExposesIt) {
  static_assert(detail::has_dropout_state<ModelWithDropoutState>);
  static_assert(!detail::has_dropout_state<ModelWithoutDropoutState>);
  ModelWithDropoutState m;
  EXPECT_EQ(detail::dropout_offsets(m), (std::vector<uint64_t>{7, 11}));
  const std::vector<uint64_t> saved = {1, 2};
  detail::restore_dropout_offsets(m, saved, "state");
  EXPECT_EQ(m.offsets, saved);
  ModelWithoutDropoutState none;
  EXPECT_TRUE(detail::dropout_offsets(none).empty());
  EXPECT_NO_THROW(detail::restore_dropout_offsets(none, {}, "state"));
  EXPECT_THROW(detail::restore_dropout_offsets(none, saved, "state"), ConfigError);
}

TEST_F(TrainerTest, NonFiniteUpdatesAreSkippedCountedAndLeaveTheModelUnchanged) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 5);
  o.poison_gradients = [](int64_t update) { return update == 2 || update == 3; };
  std::vector<std::vector<float>> after_update;
  RunLog run;
  o = recording(o, run);
  const auto record = o.on_update;
  Trainer* self = nullptr;
  o.on_update = [&](const UpdateRecord& r) {
    record(r);
    after_update.push_back(parameter_values(self->model()));
  };
  Trainer t(testing::tiny_transformer(vocab(), 0.0), *data_, o);
  self = &t;
  t.run();
  EXPECT_EQ(run.applied, (std::vector<bool>{true, false, false, true, true}));
  EXPECT_EQ(t.optimizer().step_count(), 3);
  EXPECT_EQ(t.progress().update, 5);
  EXPECT_EQ(t.progress().guard_total, 2);
  EXPECT_TRUE(same_bits(after_update[0], after_update[1]));
  EXPECT_TRUE(same_bits(after_update[0], after_update[2]));
  EXPECT_FALSE(same_bits(after_update[2], after_update[3]));
}

TEST_F(TrainerTest, NonFiniteUpdatesInARowStopTrainingWithTheGuardsMessage) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 50);
  o.max_non_finite = 3;
  o.poison_gradients = [](int64_t update) { return update >= 4; };
  Trainer t(testing::tiny_transformer(vocab(), 0.0), *data_, o);
  EXPECT_TRUE(throws_with<DivergenceError>(
      [&] { t.run(); },
      {"3 consecutive updates", "update 6", "first non-finite gradient is in ", "learn_rate"}));
  EXPECT_EQ(t.progress().update, 6);
  EXPECT_EQ(t.optimizer().step_count(), 3);
  EXPECT_FALSE(std::filesystem::exists(dir / kTrainStateFile));
}

TEST_F(TrainerTest, AHugeLearningRateDivergesIntoTheGuardNotIntoACheckpoint) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 200);
  o.schedule.learning_rate = 1e30;
  o.clip_norm = 0;
  o.save_freq = 1;  // would save a non-finite model at once if anything let it through
  Trainer t(testing::tiny_transformer(vocab(), 0.0), *data_, o);
  EXPECT_THROW(t.run(), DivergenceError);
  // Whatever was saved before the divergence loads: finite by construction.
  if (std::filesystem::exists(dir / kTrainStateFile)) {
    EXPECT_NO_THROW(load_train_state(dir / kTrainStateFile, AdamOptions{}));
  }
}

TEST_F(TrainerTest, ATinyModelLearnsTheTinyTask) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 300);
  o.label_smoothing = 0;
  o.schedule.learning_rate = 5e-3;
  RunLog run;
  models::ModelConfig c = testing::tiny_transformer(vocab(), 0.0);
  c.dim_emb = 32;
  c.dim_ffn = 64;
  Trainer t(c, *data_, recording(o, run));
  const ValidationResult before = t.validate();
  t.run();
  ASSERT_EQ(run.losses.size(), 300u);
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) first += run.losses[i] / 10;
  for (size_t i = 290; i < 300; ++i) last += run.losses[i] / 10;
  EXPECT_GT(first, 2.5);  // about log(vocab) at the start
  EXPECT_LT(last, 0.25 * first) << "first " << first << ", last " << last;
  // Unseen sentences: 118 training pairs teach the words, not yet the reversal.
  const ValidationResult after = t.validate();
  EXPECT_LT(after.loss, 0.5 * before.loss) << before.loss << " -> " << after.loss;
}

// Without observers a validation is the cross-entropy alone: no BLEU, no best model file
// (those are experiment/validators.h's, installed by the front ends).
TEST_F(TrainerTest, WritesAModelDirectoryThatLoads) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir / "m", 6);
  o.valid_freq = 2;
  o.disp_freq = 2;
  std::ostringstream log;
  o.log = &log;
  Trainer t(testing::tiny_rnn(vocab(), 0.1), *data_, o);
  const TrainSummary s = t.run();
  EXPECT_EQ(s.reason, StopReason::Updates);
  for (const char* f : {kModelFile, kVocabFile, kTrainStateFile})
    EXPECT_TRUE(std::filesystem::exists(dir / "m" / f)) << f;
  EXPECT_FALSE(std::filesystem::exists(dir / "m" / kBestModelFile));
  const LoadedModel loaded = load_model(dir / "m" / kModelFile);
  EXPECT_EQ(loaded.info.update, 6);
  EXPECT_EQ(loaded.info.config, t.model().config());
  EXPECT_EQ(data::Vocab::load(dir / "m" / kVocabFile).serialized(), data_->vocab.serialized());
  EXPECT_EQ(t.progress().validations, 3);
  // Progress lines: epoch, update, loss, tokens/s, lr, ETA (the budget is in updates).
  const std::string text = log.str();
  for (const char* part : {"ep 1 up 2: loss ", " per target token, ", " tokens/s, lr ", ", ETA ",
                           "validation 1 at up 2: cross-entropy ", " per target token (new best)"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  EXPECT_EQ(text.find("BLEU"), std::string::npos) << text;
  ASSERT_TRUE(s.last_validation.has_value());
  EXPECT_FALSE(s.last_validation->bleu.has_value());
  EXPECT_EQ(t.progress().best_valid_bleu, 0.0);
}

// Marian's validators: what a validation does besides the cross-entropy is the caller's.
// Each observer runs after every validation, in the order installed, sees the model in
// evaluation mode and the result so far; what it puts there is recorded and logged.
TEST_F(TrainerTest, ObserversAreCalledAfterEachValidationWithTheResult) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 6);
  o.valid_freq = 2;
  std::ostringstream log;
  o.log = &log;
  struct Seen {
    int64_t update;
    double loss;
    bool improved, training;
    size_t rows, references;
  };
  std::vector<Seen> seen;
  std::vector<double> bleu_seen_second;
  o.validation_observers = {
      [&](const ValidationContext& v, ValidationResult& r) {
        size_t rows = 0;
        for (const data::Batch& b : v.batches) rows += size_t(b.size());
        seen.push_back(
            {v.update, r.loss, r.improved, v.model.training(), rows, v.references.size()});
        r.bleu = 40.0 + double(v.update);  // a metric of the caller's
        if (r.improved) r.saved = "kept.bin";
      },
      [&](const ValidationContext&, ValidationResult& r) { bleu_seen_second.push_back(*r.bleu); }};
  Trainer t(testing::tiny_rnn(vocab(), 0.0), *data_, o);
  const TrainSummary s = t.run();
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].update, int64_t(2 * (i + 1)));
    EXPECT_FALSE(seen[i].training);
    EXPECT_GT(seen[i].rows, 0u);
    EXPECT_EQ(seen[i].rows, seen[i].references);
  }
  EXPECT_TRUE(seen[0].improved);
  EXPECT_EQ(bleu_seen_second, (std::vector<double>{42, 44, 46}));
  ASSERT_TRUE(s.last_validation.has_value());
  EXPECT_EQ(s.last_validation->loss, seen[2].loss);
  EXPECT_EQ(*s.last_validation->bleu, 46);
  EXPECT_TRUE(t.model().training()) << "training mode after validation";
  const std::string text = log.str();
  EXPECT_NE(text.find("validation 1 at up 2: cross-entropy "), std::string::npos) << text;
  EXPECT_NE(text.find(", BLEU 42 (new best, saved kept.bin)"), std::string::npos) << text;
  // The best validation's metric is what the checkpoint records with its loss.
  const size_t best = seen[2].improved ? 2 : seen[1].improved ? 1 : 0;
  EXPECT_EQ(t.progress().best_valid_bleu, 40.0 + double(seen[best].update));
}

// validations.tsv: one row per validation with the training time apart from the time
// spent validating (what a time-to-quality curve needs), the log line says the same; a
// resumed run drops the rows of validations after its checkpoint (a run that stopped
// before saving) instead of repeating them.
TEST_F(TrainerTest, ValidationLogHasOneRowPerValidationAcrossResume) {
  const auto dir = test_dir();
  const auto log_file = dir / kValidationLogFile;
  const auto rows = [&] {
    std::ifstream in(log_file);
    std::vector<std::vector<std::string>> out;
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> fields;
      std::istringstream split(line);
      for (std::string f; std::getline(split, f, '\t');) fields.push_back(f);
      out.push_back(fields);
    }
    return out;
  };
  TrainerOptions o = testing::tiny_options(dir, 4);
  o.valid_freq = 2;
  std::ostringstream log;
  o.log = &log;
  {
    Trainer t(testing::tiny_rnn(vocab(), 0.0), *data_, o);
    t.run();
    EXPECT_GT(t.progress().valid_seconds, 0.0);
    EXPECT_LT(t.progress().valid_seconds, t.progress().wall_seconds);
  }
  EXPECT_NE(log.str().find(" s training + "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find(" s validating\n"), std::string::npos) << log.str();
  // A validation 3 that a crashed session logged after the checkpoint at update 4.
  std::ofstream(log_file, std::ios::app) << "3\t6\t0\t1.0\t1.0\t99.000000\t\n";
  o.after = {.updates = 6};
  Trainer resumed = Trainer::resume(*data_, o);
  resumed.run();
  const auto got = rows();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0],
            (std::vector<std::string>{"validation", "update", "tokens_seen", "train_seconds",
                                      "valid_seconds", "cross_entropy", "bleu"}));
  double last_train = 0, last_valid = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), 6u) << "no BLEU without observers: an empty last field";
    EXPECT_EQ(got[i][0], std::to_string(i));
    EXPECT_EQ(got[i][1], std::to_string(2 * i));
    EXPECT_NE(got[i][5], "99.000000") << "the crashed session's row was kept";
    const double train_s = std::stod(got[i][3]), valid_s = std::stod(got[i][4]);
    EXPECT_GE(train_s, last_train);
    EXPECT_GT(valid_s, last_valid);
    last_train = train_s;
    last_valid = valid_s;
  }
}

// A front end that trained the vocabulary into the model directory has written it; the
// Trainer writes vocab.spm only when the directory does not hold this vocabulary already.
TEST_F(TrainerTest, TheVocabularyIsWrittenOnce) {
  namespace fs = std::filesystem;
  const auto dir = test_dir();
  fs::create_directories(dir / "there");
  const std::string bytes = data_->vocab.serialized();
  std::ofstream(dir / "there" / kVocabFile, std::ios::binary) << bytes;
  const auto old = fs::last_write_time(dir / "there" / kVocabFile) - std::chrono::hours(1);
  fs::last_write_time(dir / "there" / kVocabFile, old);
  Trainer(testing::tiny_rnn(vocab(), 0.0), *data_, testing::tiny_options(dir / "there", 1));
  EXPECT_EQ(fs::last_write_time(dir / "there" / kVocabFile), old) << "written again";
  // Another vocabulary in the directory (or none) is replaced by this one.
  fs::create_directories(dir / "other");
  std::ofstream(dir / "other" / kVocabFile) << "another vocabulary";
  Trainer(testing::tiny_rnn(vocab(), 0.0), *data_, testing::tiny_options(dir / "other", 1));
  EXPECT_EQ(data::Vocab::load(dir / "other" / kVocabFile).serialized(), bytes);
}

TEST_F(TrainerTest, ProgressComesAfterTheFirstUpdateAndByTime) {
  const auto dir = test_dir();
  const auto count = [](const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  {
    // By count every 100 updates, but a run of 4 still shows its first one.
    TrainerOptions o = testing::tiny_options(dir / "count", 4);
    o.disp_freq = 100;
    std::ostringstream log;
    o.log = &log;
    Trainer(testing::tiny_rnn(vocab(), 0.0), *data_, o).run();
    EXPECT_EQ(count(log.str(), ": loss "), 1) << log.str();
    EXPECT_NE(log.str().find("ep 1 up 1: loss "), std::string::npos) << log.str();
    // One epoch numbering: the summary says the epoch the progress lines said.
    EXPECT_NE(log.str().find("training stopped after update 4 (ep 1)"), std::string::npos)
        << log.str();
  }
  {
    // By time: a line whenever the interval has passed (here: after every update).
    TrainerOptions o = testing::tiny_options(dir / "time", 4);
    o.disp_freq = 0;
    o.disp_seconds = 1e-9;
    std::ostringstream log;
    o.log = &log;
    Trainer(testing::tiny_rnn(vocab(), 0.0), *data_, o).run();
    EXPECT_EQ(count(log.str(), ": loss "), 4) << log.str();
  }
  {
    // Both off: no progress lines at all.
    TrainerOptions o = testing::tiny_options(dir / "off", 3);
    o.disp_freq = 0;
    std::ostringstream log;
    o.log = &log;
    Trainer(testing::tiny_rnn(vocab(), 0.0), *data_, o).run();
    EXPECT_EQ(count(log.str(), ": loss "), 0) << log.str();
  }
  TrainerOptions bad = testing::tiny_options(dir / "bad", 1);
  bad.disp_seconds = -1;
  EXPECT_THROW(Trainer(testing::tiny_rnn(vocab(), 0.0), *data_, bad), ConfigError);
}

TEST_F(TrainerTest, EarlyStoppingEndsTrainingAfterNValidationsWithoutImprovement) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 50);
  // Steps of 1e-30 vanish in rounding: the validation loss stays where it is.
  o.schedule.learning_rate = 1e-30;
  o.valid_freq = 1;
  o.early_stopping = 2;
  Trainer t(testing::tiny_transformer(vocab(), 0.0), *data_, o);
  const TrainSummary s = t.run();
  EXPECT_EQ(s.reason, StopReason::EarlyStopping);
  EXPECT_EQ(t.progress().stalled_validations, 2);
  EXPECT_LT(t.progress().update, 10);
  EXPECT_TRUE(s.last_validation.has_value());
}

TEST_F(TrainerTest, EpochBudgetStopsAtTheEpochBoundary) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 0);
  o.after = {.epochs = 1};
  Trainer t(testing::tiny_transformer(vocab(), 0.0), *data_, o);
  const TrainSummary s = t.run();
  EXPECT_EQ(s.reason, StopReason::Epochs);
  EXPECT_EQ(t.progress().update, t.batches_per_epoch());
  EXPECT_EQ(t.progress().position.epoch, 1u);
  EXPECT_EQ(t.progress().position.index, 0u);
}

TEST_F(TrainerTest, AStopRequestEndsTrainingWithACheckpoint) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 100);
  std::atomic<bool> stop{false};
  o.stop_requested = &stop;
  o.on_update = [&](const UpdateRecord& r) { stop = r.update == 3; };
  Trainer t(testing::tiny_transformer(vocab(), 0.0), *data_, o);
  EXPECT_EQ(t.run().reason, StopReason::Interrupted);
  EXPECT_EQ(load_model(dir / kModelFile).info.update, 3);
}

TEST_F(TrainerTest, ResumeChecksItsInputs) {
  const auto dir = test_dir();
  TrainerOptions o = testing::tiny_options(dir, 2);
  EXPECT_TRUE(throws_with<IoError>([&] { Trainer::resume(*data_, o); },
                                   {"cannot resume", kTrainStateFile}));
  Trainer(testing::tiny_transformer(vocab(), 0.0), *data_, o).run();
  TrainingData other = *data_;
  auto fewer = std::make_shared<data::TokenizedCorpus>(*data_->train);
  fewer->source.pop_back();
  fewer->target.pop_back();
  fewer->line_numbers.pop_back();
  other.train = fewer;
  EXPECT_TRUE(throws_with<ConfigError>([&] { Trainer::resume(other, o); }, {"fingerprint"}));
  models::ModelConfig wrong = testing::tiny_transformer(vocab() + 1, 0.0);
  EXPECT_TRUE(throws_with<ConfigError>([&] { Trainer(wrong, *data_, o); }, {"vocab_size"}));
}

}  // namespace
}  // namespace qkv::train
