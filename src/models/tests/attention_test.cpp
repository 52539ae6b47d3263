// The attention rows decoding reports: distributions over the real source tokens, zero
// on padding; per layer / head for the Transformer; and the rnn's precomputed additive
// attention against attention::attend().
#include <gtest/gtest.h>

#include "detail/rnn_layers.h"
#include "model_test_util.h"
#include "qkv/autograd/functions.h"
#include "qkv/testing/tensors.h"

namespace qkv::models {
namespace {

using namespace qkv::models::testing;  // NOLINT
using qkv::testing::all_close;

// Every row of attention [B, Ts]: sums to 1 over t < lengths[b], exactly 0 beyond.
void expect_distributions(const Tensor& attention, const std::vector<int64_t>& lengths) {
  const Tensor a = attention.to(DType::F64);
  ASSERT_EQ(a.shape(), Shape({int64_t(lengths.size()), a.dim(1)}));
  for (int64_t b = 0; b < a.dim(0); ++b) {
    double sum = 0;
    for (int64_t t = 0; t < a.dim(1); ++t) {
      const double w = a.at<double>({b, t});
      if (t >= lengths[size_t(b)]) {
        EXPECT_EQ(w, 0.0) << "row " << b << " padding " << t;
        continue;
      }
      EXPECT_GE(w, 0.0);
      sum += w;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << b;
  }
}

class AttentionRows : public ::testing::TestWithParam<Variant> {};

TEST_P(AttentionRows, SumToOneOverRealTokensAndZeroOnPadding) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 5);
  model->set_training(false);
  const Batch batch = sample_batch();
  const Stepped s = step_through(*model, batch, true);
  const Stepped without = step_through(*model, batch, false);
  for (size_t t = 0; t < s.attention.size(); ++t) {
    EXPECT_FALSE(without.attention[t].defined());  // computed only when asked for
    // Asking for the weights does not change the prediction.
    EXPECT_TRUE(qkv::testing::bitwise_equal(s.log_probs[t], without.log_probs[t]));
    if (GetParam().config.attention == AttentionKind::None) {
      EXPECT_FALSE(s.attention[t].defined());
      continue;
    }
    expect_distributions(s.attention[t], batch.src_lengths);
  }
}

std::vector<Variant> attending_variants() {
  std::vector<Variant> v;
  for (const Variant& x : all_variants())
    if (x.config.attention != AttentionKind::None) v.push_back(x);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Models, AttentionRows, ::testing::ValuesIn(attending_variants()),
                         [](const auto& p) { return p.param.name; });

// Each layer's and head's cross-attention is a distribution; the default (-1, -1) is the
// last layer's mean over heads.
TEST(TransformerAttention, PerLayerAndHead) {
  ModelConfig config = tiny_transformer();
  const auto model = make_model(config, 9);
  model->set_training(false);
  const Batch batch = sample_batch();
  const Stepped averaged = step_through(*model, batch, true);
  for (int64_t layer = 0; layer < config.dec_depth; ++layer) {
    std::vector<Stepped> heads;
    for (int64_t head = 0; head < config.heads; ++head) {
      heads.push_back(step_through(*model, batch, true, {.layer = layer, .head = head}));
      for (const Tensor& a : heads.back().attention) expect_distributions(a, batch.src_lengths);
    }
    const Stepped mean = step_through(*model, batch, true, {.layer = layer});
    for (size_t t = 0; t < mean.attention.size(); ++t) {
      Tensor expected = Tensor::zeros(mean.attention[t].shape(), DType::F64);
      for (const Stepped& h : heads) {
        const Tensor a = h.attention[t].to(DType::F64);
        for (int64_t i = 0; i < a.numel(); ++i)
          expected.data<double>()[i] += a.data<double>()[i] / double(config.heads);
      }
      EXPECT_TRUE(all_close(mean.attention[t].to(DType::F64), expected, 1e-6, 0));
      if (layer == config.dec_depth - 1) {
        EXPECT_TRUE(qkv::testing::bitwise_equal(mean.attention[t], averaged.attention[t]));
      }
    }
  }
  // Heads differ (else the per-head option would be pointless to test).
  const Stepped h0 = step_through(*model, batch, true, {.layer = 0, .head = 0});
  const Stepped h1 = step_through(*model, batch, true, {.layer = 0, .head = 1});
  EXPECT_FALSE(all_close(h0.attention[1], h1.attention[1], 1e-4, 0));
}

// Every layer's every head comes only when asked for (search asks for attention at every
// step and needs one layer); asking changes neither the prediction nor the selected row.
TEST(TransformerAttention, EveryLayerOnlyWhenAsked) {
  const ModelConfig config = tiny_transformer();
  const auto model = make_model(config, 9);
  model->set_training(false);
  const Batch batch = sample_batch();
  const Tensor bos = Tensor::full({batch.src.dim(0)}, float(config.bos_id));
  const auto first_step = [&](const AttentionSelection& which) {
    const EncoderOutput encoded = model->encode(batch.src, batch.src_lengths);
    const std::unique_ptr<DecoderState> state = model->initial_state(encoded);
    return model->step(bos, *state, true, which);
  };
  const StepOutput one = first_step({.layer = 0, .head = 1});
  EXPECT_TRUE(one.layer_attention.empty());
  const StepOutput all = first_step({.layer = 0, .head = 1, .every_layer = true});
  ASSERT_EQ(int64_t(all.layer_attention.size()), config.dec_depth);
  for (const Tensor& w : all.layer_attention)
    EXPECT_EQ(w.shape(), Shape({batch.src.dim(0), config.heads, batch.src.dim(1)}));
  EXPECT_TRUE(qkv::testing::bitwise_equal(one.log_probs, all.log_probs));
  EXPECT_TRUE(qkv::testing::bitwise_equal(one.attention, all.attention));
  const Tensor& l0 = all.layer_attention[0];
  EXPECT_TRUE(qkv::testing::bitwise_equal(
      l0.slice(1, 1, 2).contiguous().reshape({l0.dim(0), l0.dim(2)}), one.attention));
}

// RnnLayers' additive attention precomputes U·h_j once per source; the result must be
// attention::attend()'s Bahdanau attention with the same parameters, in float64.
TEST(AdditiveAttention, PrecomputedKeysEqualAttend) {
  ModelConfig config = tiny_rnn(AttentionKind::Additive, CellType::Gru);
  nn::ParameterStore store(4, DType::F64);
  detail::RnnLayers layers(store, config);
  layers.set_training(false);
  const Batch batch = sample_batch();
  const detail::RnnEncoded enc = layers.encode(batch.src, batch.src_lengths);
  const detail::RnnMemory memory = layers.prepare_memory(enc.memory, batch.src_lengths);
  const detail::RnnDecoderVars state = layers.bridge(enc.final_states);
  const autograd::Variable y = layers.embed_target(Tensor::full({3}, 2.0f));
  const detail::RnnStepResult r = layers.step(y, state, memory, true);

  attention::MaskSpec mask{.key_lengths = batch.src_lengths};
  attention::ScoreParams params{store.get("attention.w"), store.get("attention.u"),
                                store.get("attention.b"), store.get("attention.v")};
  const autograd::Variable s = autograd::reshape(state.h.back(), {3, 1, config.dim_rnn});
  for (const bool fused : {true, false}) {
    const attention::AttentionOutput a = attention::attend(
        s, enc.memory, enc.memory, mask, params,
        {.kind = attention::ScoreKind::Additive, .need_weights = true, .fused = fused});
    EXPECT_TRUE(all_close(r.weights.value(), a.weights.value(), 1e-12, 1e-12)) << fused;
  }
}

}  // namespace
}  // namespace qkv::models
