// --accumulate N: one update of N micro-batches is, bitwise, the weighted sum in order of
// gradient_exchange.h computed here by hand from the model's own forward and backward;
// its loss is that of the union batch up to rounding; resuming stays bit-exact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "pipeline_test_util.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/field_error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/train/gradient_exchange.h"
#include "qkv/train/trainer.h"

namespace qkv::train {
namespace {

using testing::parameter_values;
using testing::test_dir;

class AccumulateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_num_threads(2);
    dir_ = new std::filesystem::path(std::filesystem::path(::testing::TempDir()) /
                                     ("qkv_accumulate_data." + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_);
    data_ = new TrainingData(testing::tiny_task(*dir_));
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete data_;
    delete dir_;
  }
  static TrainerOptions options(const std::string& name, int64_t updates, int64_t accumulate) {
    TrainerOptions o = testing::tiny_options(test_dir() / name, updates);
    o.accumulate = accumulate;
    o.batch.pad_id = data_->vocab.pad_id();
    o.batch.bos_id = data_->vocab.bos_id();
    o.batch.eos_id = data_->vocab.eos_id();
    return o;
  }
  static std::filesystem::path* dir_;
  static TrainingData* data_;
};
std::filesystem::path* AccumulateTest::dir_ = nullptr;
TrainingData* AccumulateTest::data_ = nullptr;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double loss_value(const autograd::Variable& v) {
  return v.value().to(DType::F64).data<double>()[0];
}

// The first update of `o` computed by hand: micro-batch j's gradient with dropout counters
// j * 2^36, weighted by its target tokens, summed in order from +0, one Adam step.
struct HandUpdate {
  std::vector<float> params;
  double loss = 0;
};
HandUpdate by_hand(const models::ModelConfig& config, const TrainingData& data,
                   const TrainerOptions& o) {
  std::unique_ptr<models::Seq2Seq> model = models::make_model(config, o.seed);
  nn::ParameterStore& store = model->parameters();
  data::BatchIterator it(data.train, o.batch, o.seed);
  std::vector<data::Batch> batches;
  int64_t tokens = 0;
  for (int64_t j = 0; j < o.accumulate; ++j) {
    batches.push_back(it.next());
    tokens += batches.back().tgt_tokens;
  }
  std::vector<float> sum(size_t(store.numel()), 0.0f);
  HandUpdate out;
  for (size_t j = 0; j < batches.size(); ++j) {
    const data::Batch& b = batches[j];
    model->set_dropout_offsets(
        std::vector<uint64_t>(model->dropout_offsets().size(), uint64_t(j) << 36));
    store.zero_grad();
    const autograd::Variable loss = model->forward_train_loss(
        b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out,
        {.label_smoothing = o.label_smoothing, .ignore_index = o.batch.pad_id});
    out.loss += loss_value(loss) * double(b.tgt_tokens);
    autograd::backward(loss);
    add_weighted(sum, {store.grads().data<float>(), size_t(store.numel())},
                 float(double(b.tgt_tokens) / double(tokens)));
  }
  out.loss /= double(tokens);
  Adam adam(store.numel(), o.adam);
  adam.step({store.values().data<float>(), size_t(store.numel())}, sum,
            learning_rate_at(o.schedule, 1));
  out.params = parameter_values(*model);
  return out;
}

TEST_F(AccumulateTest, AnUpdateIsTheTokenWeightedSumOfItsMicroBatchesInOrder) {
  for (const models::ModelConfig& config : {testing::tiny_transformer(data_->vocab.size(), 0.2),
                                            testing::tiny_rnn(data_->vocab.size(), 0.2)}) {
    TrainerOptions o = options("run", 1, 3);
    o.clip_norm = 0;  // the sum itself reaches Adam
    double recorded = 0;
    o.on_update = [&](const UpdateRecord& r) { recorded = r.loss; };
    Trainer trainer(config, *data_, o);
    trainer.run();
    const HandUpdate expected = by_hand(config, *data_, o);
    EXPECT_TRUE(same_bits(parameter_values(trainer.model()), expected.params));
    EXPECT_EQ(recorded, expected.loss);
    EXPECT_EQ(trainer.progress().micro_batches, 3);
    std::filesystem::remove_all(o.model_dir);
  }
}

// The definition is the mean loss per target token of the union: without dropout, the
// loss of one batch holding all N micro-batches' pairs agrees up to float rounding.
TEST_F(AccumulateTest, TheUpdateLossIsTheUnionBatchsLoss) {
  const models::ModelConfig config = testing::tiny_transformer(data_->vocab.size(), 0.0);
  TrainerOptions o = options("union", 1, 4);
  double recorded = 0;
  int64_t tokens = 0;
  o.on_update = [&](const UpdateRecord& r) {
    recorded = r.loss;
    tokens = r.tgt_tokens;
  };
  Trainer(config, *data_, o).run();
  data::BatchIterator it(data_->train, o.batch, o.seed);
  std::vector<int64_t> rows;
  for (int j = 0; j < 4; ++j) {
    const data::Batch b = it.next();
    rows.insert(rows.end(), b.indices.begin(), b.indices.end());
  }
  const data::Batch all = data::make_batch(*data_->train, rows, o.batch);
  EXPECT_EQ(all.tgt_tokens, tokens);
  std::unique_ptr<models::Seq2Seq> model = models::make_model(config, o.seed);
  const autograd::NoGradGuard no_grad;
  const double union_loss = loss_value(model->forward_train_loss(
      all.src, all.src_lengths, all.tgt_in, all.tgt_lengths, all.tgt_out,
      {.label_smoothing = o.label_smoothing, .ignore_index = o.batch.pad_id}));
  EXPECT_NEAR(recorded, union_loss, 1e-5 * std::abs(union_loss));
  EXPECT_NE(recorded, 0.0);
}

TEST_F(AccumulateTest, ResumeIsBitExactWithDropout) {
  const models::ModelConfig config = testing::tiny_rnn(data_->vocab.size(), 0.2);
  std::vector<double> straight_losses, split_losses;
  TrainerOptions o = options("straight", 6, 2);
  o.on_update = [&](const UpdateRecord& r) { straight_losses.push_back(r.loss); };
  Trainer straight(config, *data_, o);
  straight.run();

  o = options("split", 3, 2);
  o.on_update = [&](const UpdateRecord& r) { split_losses.push_back(r.loss); };
  Trainer(config, *data_, o).run();
  o.after.updates = 6;
  Trainer second = Trainer::resume(*data_, o);
  EXPECT_EQ(second.progress().micro_batches, 6);
  second.run();
  EXPECT_EQ(straight_losses, split_losses);
  EXPECT_TRUE(same_bits(parameter_values(straight.model()), parameter_values(second.model())));
  EXPECT_EQ(second.progress().micro_batches, 12);
}

// A non-finite sum skips the whole update, as a non-finite batch does without --accumulate.
TEST_F(AccumulateTest, ANonFiniteSumSkipsTheUpdate) {
  const models::ModelConfig config = testing::tiny_rnn(data_->vocab.size(), 0.0);
  TrainerOptions o = options("poison", 3, 2);
  std::vector<bool> applied;
  std::vector<float> before_poisoned;
  Trainer* current = nullptr;
  o.on_update = [&](const UpdateRecord& r) {
    applied.push_back(r.applied);
    if (r.update == 1) before_poisoned = parameter_values(current->model());
    if (r.update == 2) {
      EXPECT_TRUE(same_bits(parameter_values(current->model()), before_poisoned));
    }
  };
  o.poison_gradients = [](int64_t update) { return update == 2; };
  Trainer trainer(config, *data_, o);
  current = &trainer;
  trainer.run();
  EXPECT_EQ(applied, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(trainer.progress().guard_total, 1);
  EXPECT_EQ(trainer.progress().micro_batches, 6);
}

TEST_F(AccumulateTest, OutOfRangeIsRefusedNamingTheField) {
  TrainerOptions o = options("bad", 1, 0);
  EXPECT_TRUE(testing::throws_with<FieldError>(
      [&] { Trainer(testing::tiny_rnn(data_->vocab.size(), 0.0), *data_, o); },
      {"accumulate 0", "[1, 4096]"}));
}

}  // namespace
}  // namespace qkv::train
