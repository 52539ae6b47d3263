// forward_train_loss, the fused output projection + loss that training runs, equals the
// composed oracle cross_entropy(forward_train(...)) for every variant (tied and untied
// tables, rnn readout dropout, transformer), in the loss and in every parameter's
// gradient, with dropout on and the same masks.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "qkv/autograd/functions.h"

namespace qkv::models {
namespace {

using namespace qkv::models::testing;  // NOLINT
using autograd::Variable;

struct LossAndGrads {
  double loss = 0;
  Tensor grads;  // the store's gradient arena
};

LossAndGrads run(Seq2Seq& model, const Batch& b, bool fused) {
  const ops::CrossEntropyOptions o{.label_smoothing = 0.1, .ignore_index = 0};
  model.parameters().zero_grad();
  const Variable loss =
      fused ? model.forward_train_loss(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out, o)
            : autograd::cross_entropy(
                  model.forward_train(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths), b.tgt_out, o);
  autograd::backward(loss);
  return {loss.value().to(DType::F64).data<double>()[0], model.parameters().grads().clone()};
}

class TrainingLoss : public ::testing::TestWithParam<Variant> {};

TEST_P(TrainingLoss, FusedEqualsComposedWithTheSameDropoutMasks) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 5, DType::F64);
  model->set_training(true);
  const Batch batch = sample_batch();
  const std::vector<uint64_t> offsets = model->dropout_offsets();
  const LossAndGrads composed = run(*model, batch, false);
  model->set_dropout_offsets(offsets);
  const LossAndGrads fused = run(*model, batch, true);
  EXPECT_NEAR(fused.loss, composed.loss, 1e-12);
  const double* f = fused.grads.data<double>();
  const double* c = composed.grads.data<double>();
  double worst = 0;
  for (int64_t i = 0; i < fused.grads.numel(); ++i) worst = std::max(worst, std::abs(f[i] - c[i]));
  EXPECT_LT(worst, 1e-12);
}

// Validation evaluates the fused loss without gradients (no tape, no gradient buffers).
TEST_P(TrainingLoss, WithoutGradModeFusedEqualsComposedAndRecordsNothing) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 6, DType::F64);
  model->set_training(false);
  const Batch b = sample_batch();
  const autograd::NoGradGuard no_grad;
  const ops::CrossEntropyOptions o{.ignore_index = 0};
  const Tensor fused =
      model->forward_train_loss(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out, o)
          .value();
  const Tensor composed =
      autograd::cross_entropy(model->forward_train(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths),
                              b.tgt_out, o)
          .value();
  EXPECT_EQ(autograd::tape_size(), 0u);
  EXPECT_NEAR(fused.data<double>()[0], composed.data<double>()[0], 1e-12);
}

// Targets that are not shaped like tgt_in are a ShapeError naming tgt_out, for every model
// (the Transformer checks before it packs the targets by tgt_in's lengths).
TEST_P(TrainingLoss, TargetsOfAnotherShapeAreAShapeErrorNamingThem) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 7);
  const Batch b = sample_batch();
  const Tensor longer = Tensor::zeros({b.tgt_out.dim(0), b.tgt_out.dim(1) + 1});
  try {
    model->forward_train_loss(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, longer, {});
    ADD_FAILURE() << "no error for tgt_out " << longer.shape();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("tgt_out"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TrainingLoss, ::testing::ValuesIn(all_variants()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace qkv::models
