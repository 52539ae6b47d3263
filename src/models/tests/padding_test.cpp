// Padding invariance: a sentence alone gives the same encoder outputs, logits and
// decoding steps as the same sentence inside a padded batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model_test_util.h"
#include "qkv/autograd/variable.h"
#include "qkv/nn/parameters.h"
#include "qkv/ops/sequence.h"
#include "qkv/testing/tensors.h"

namespace qkv::models {
namespace {

using namespace qkv::models::testing;  // NOLINT
using qkv::testing::all_close;

class Padding : public ::testing::TestWithParam<Variant> {};

TEST_P(Padding, SentenceAloneEqualsInsidePaddedBatch) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 11);
  model->set_training(false);
  const Batch batch = sample_batch();
  const autograd::NoGradGuard no_grad;
  const Tensor logits =
      model->forward_train(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_lengths).value();
  const EncoderOutput enc = model->encode(batch.src, batch.src_lengths);
  const Stepped stepped = step_through(*model, batch, true);
  for (int64_t b = 0; b < 3; ++b) {
    const Batch one = row_of(batch, b);
    const int64_t ts = one.src_lengths[0], tt = one.tgt_lengths[0];
    // Rows 1 and 2 are padded on both sides (row 0 is the longest source and target).
    if (b > 0) {
      ASSERT_LT(ts * tt, batch.src.dim(1) * batch.tgt_in.dim(1));
    }
    const Tensor alone =
        model->forward_train(one.src, one.src_lengths, one.tgt_in, one.tgt_lengths).value();
    EXPECT_TRUE(all_close(alone, row(logits, b).slice(1, 0, tt), 1e-5, 1e-5)) << "row " << b;
    const EncoderOutput enc_one = model->encode(one.src, one.src_lengths);
    EXPECT_TRUE(all_close(enc_one.memory, row(enc.memory, b).slice(1, 0, ts), 1e-5, 1e-5));
    for (size_t i = 0; i < enc.final_states.size(); ++i)
      EXPECT_TRUE(all_close(enc_one.final_states[i], row(enc.final_states[i], b), 1e-5, 1e-5));
    const Stepped alone_steps = step_through(*model, one, true);
    for (int64_t t = 0; t < tt; ++t) {
      EXPECT_TRUE(all_close(alone_steps.log_probs[size_t(t)], row(stepped.log_probs[size_t(t)], b),
                            1e-5, 1e-5));
      if (!stepped.attention[size_t(t)].defined()) continue;
      EXPECT_TRUE(all_close(alone_steps.attention[size_t(t)],
                            row(stepped.attention[size_t(t)], b).slice(1, 0, ts), 1e-5, 1e-5));
    }
  }
}

// The Transformer trains on its real positions only (attention::PackedBatch): no
// LayerNorm, projection or FFN sees a padded position. Poison the pad id's embedding row
// in both tables: had any layer computed a padded row, its NaN would reach a weight
// gradient (x_padᵀ · 0 is NaN) or the loss.
TEST(PaddingWork, TransformerTrainingNeverComputesAPaddedPosition) {
  ModelConfig config = tiny_transformer();
  config.tied_embeddings = false;
  config.dropout = 0.1;
  const std::unique_ptr<Seq2Seq> model = make_model(config, 11);
  model->set_training(true);
  nn::ParameterStore& store = model->parameters();
  for (const char* table : {"encoder.embeddings.weight", "decoder.embeddings.weight"}) {
    const Tensor& w = store.get(table).value();
    for (int64_t e = 0; e < w.dim(1); ++e) w.at<float>({0, e}) = std::nanf("");
  }
  const Batch batch = sample_batch();
  const autograd::Variable loss =
      model->forward_train_loss(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_lengths,
                                batch.tgt_out, {.label_smoothing = 0.1, .ignore_index = 0});
  ASSERT_TRUE(std::isfinite(loss.value().data<float>()[0]));
  autograd::backward(loss);
  for (const nn::Parameter& p : store.parameters()) {
    const std::vector<float> g = p.variable.grad().to_vector<float>();
    EXPECT_TRUE(std::ranges::all_of(g, [](float v) { return std::isfinite(v); })) << p.name;
  }
  // Inference too: the encoder's memory is zero at padded positions, not NaN.
  const EncoderOutput enc = model->encode(batch.src, batch.src_lengths);
  const std::vector<float> memory = enc.memory.to_vector<float>();
  EXPECT_TRUE(std::ranges::all_of(memory, [](float v) { return std::isfinite(v); }));
}

INSTANTIATE_TEST_SUITE_P(Models, Padding, ::testing::ValuesIn(all_variants()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace qkv::models
