// Gradient norms by source position checked against finite differences of the loss
// computed another way: through the inference API (encode, initial_state, step), in
// float64, perturbing the source embedding (input site) or the encoder's output as the
// decoder receives it (output site). Plus the laws: a sentence's norms do not depend on
// its batch (padding contributes nothing), the model is left as it was found.
#include "qkv/experiment/gradient_flow.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <ostream>

#include "qkv/autograd/variable.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/testing/expect_error.h"

namespace qkv::experiment {
namespace {

using models::AttentionKind;
using models::ModelConfig;
using models::ModelType;

struct Case {
  std::string name;
  ModelConfig config;
};
// gtest prints a parameter by name instead of its bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

// Tiny models, every size different (a mix-up shows as a shape error). Dropout is on so
// that a measurement outside evaluation mode would not match the reference. Untied
// embeddings: the source table then feeds nothing but the encoder.
ModelConfig tiny(ModelType type, AttentionKind attention, models::CellType cell) {
  ModelConfig c;
  c.type = type;
  c.attention = attention;
  c.cell = cell;
  c.vocab_size = 20;
  c.dim_emb = 8;
  c.dim_rnn = 5;
  c.enc_depth = 2;  // the rnn's output site reads the TOP layer's final states
  c.dec_depth = 1;
  c.heads = 2;
  c.dim_ffn = 7;
  c.dropout = 0.2;
  c.tied_embeddings = false;
  c.max_positions = 32;
  return c;
}

std::vector<Case> cases() {
  using models::CellType;
  return {{"rnn_none", tiny(ModelType::Rnn, AttentionKind::None, CellType::Gru)},
          {"rnn_additive", tiny(ModelType::Rnn, AttentionKind::Additive, CellType::Gru)},
          {"rnn_general_lstm", tiny(ModelType::Rnn, AttentionKind::General, CellType::Lstm)},
          {"transformer", tiny(ModelType::Transformer, AttentionKind::ScaledDot, CellType::Gru)}};
}

// Three pairs; every source id (4..19) appears once in the batch, so moving one
// embedding row moves one source position (EOS, id 3, ends every row).
data::TokenizedCorpus sample_pairs() {
  data::TokenizedCorpus c;
  c.source = {{4, 5, 6, 7, 8}, {9, 10, 11}, {12, 13}};
  c.target = {{5, 9, 4, 4}, {17, 6}, {8, 8, 12, 19, 7, 11}};
  c.line_numbers = {1, 2, 3};
  return c;
}

data::Batch batch_of(const data::TokenizedCorpus& pairs, std::vector<int64_t> rows) {
  return data::make_batch(pairs, rows, {});  // default ids: pad 0, bos 2, eos 3
}

// The reference loss, not through forward_train: Σ_b mean over b's target tokens of
// -log p(y_t | y_<t, x) by stepping the decoder from `encoded`, in float64.
double stepped_loss(models::Seq2Seq& model, const models::EncoderOutput& encoded,
                    const data::Batch& batch) {
  const Tensor tgt_in = batch.tgt_in.to(DType::F64), tgt_out = batch.tgt_out.to(DType::F64);
  const int64_t rows = tgt_in.dim(0), width = tgt_in.dim(1);
  std::unique_ptr<models::DecoderState> state = model.initial_state(encoded);
  double loss = 0;
  for (int64_t t = 0; t < width; ++t) {
    const Tensor prev = tgt_in.slice(1, t, t + 1).contiguous().reshape({rows});
    const Tensor lp = model.step(prev, *state, false).log_probs.to(DType::F64).contiguous();
    for (int64_t b = 0; b < rows; ++b)
      if (t < batch.tgt_lengths[size_t(b)]) {
        const auto y = int64_t(tgt_out.at<double>({b, t}));
        loss -= lp.at<double>({b, y}) / double(batch.tgt_lengths[size_t(b)]);
      }
  }
  return loss;
}

// Central differences of `loss` over `n` coordinates, each moved by `move(k, ±eps)`:
// the norm of the finite-difference gradient.
double fd_norm(int64_t n, const std::function<void(int64_t, double)>& move,
               const std::function<double()>& loss) {
  constexpr double kEps = 1e-6;
  double sq = 0;
  for (int64_t k = 0; k < n; ++k) {
    move(k, kEps);
    const double up = loss();
    move(k, -2 * kEps);
    const double down = loss();
    move(k, kEps);
    const double g = (up - down) / (2 * kEps);
    sq += g * g;
  }
  return std::sqrt(sq);
}

void expect_close(double actual, double expected, const std::string& where) {
  EXPECT_NEAR(actual, expected, 1e-6 * std::max(1.0, std::abs(expected))) << where;
}

class GradientFlowTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    model_ = models::make_model(GetParam().config, 7, DType::F64);
    pairs_ = sample_pairs();
    batch_ = batch_of(pairs_, {0, 1, 2});
  }
  std::unique_ptr<models::Seq2Seq> model_;
  data::TokenizedCorpus pairs_;
  data::Batch batch_;
};

TEST_P(GradientFlowTest, InputNormsEqualFiniteDifferencesOfTheSourceEmbedding) {
  const auto norms = source_gradient_norms(*model_, batch_, GradientSite::EncoderInput);
  model_->set_training(false);
  const Tensor table = model_->parameters().get("encoder.embeddings.weight").value();  // [V, E]
  const int64_t e = table.dim(1);
  // The Transformer reads sqrt(E)·embedding + position, so d/d(row) = sqrt(E)·d/dx_j.
  const double scale = GetParam().config.type == ModelType::Transformer ? std::sqrt(double(e)) : 1;
  const Tensor src = batch_.src.to(DType::F64);
  for (size_t b = 0; b < norms.size(); ++b) {
    ASSERT_EQ(int64_t(norms[b].size()), batch_.src_lengths[b]);
    for (int64_t j = 0; j + 1 < batch_.src_lengths[b]; ++j) {  // EOS is shared by every row
      const auto id = int64_t(src.at<double>({int64_t(b), j}));
      const double fd = fd_norm(
          e,
          [&](int64_t k, double d) {
            table.at<double>({id, k}) += d;
          },
          [&] { return stepped_loss(*model_, model_->encode(src, batch_.src_lengths), batch_); });
      expect_close(scale * norms[b][size_t(j)], fd,
                   "sentence " + std::to_string(b) + " position " + std::to_string(j));
    }
  }
}

TEST_P(GradientFlowTest, OutputNormsEqualFiniteDifferencesOfTheEncoderOutput) {
  const auto norms = source_gradient_norms(*model_, batch_, GradientSite::EncoderOutput);
  model_->set_training(false);
  const Tensor src = batch_.src.to(DType::F64);
  models::EncoderOutput enc = model_->encode(src, batch_.src_lengths);
  enc.memory = enc.memory.clone();
  for (Tensor& f : enc.final_states) f = f.clone();
  const int64_t d = enc.memory.dim(2), h = d / 2;
  const bool rnn = GetParam().config.type == ModelType::Rnn;
  for (size_t b = 0; b < norms.size(); ++b) {
    const auto row = int64_t(b);
    const int64_t len = batch_.src_lengths[b];
    ASSERT_EQ(int64_t(norms[b].size()), len);
    for (int64_t j = 0; j < len; ++j) {
      // h_j as the decoder receives it: the memory row and, for the rnn, the final
      // states that are copies of its halves.
      const auto move = [&](int64_t k, double delta) {
        enc.memory.at<double>({row, j, k}) += delta;
        if (rnn && k < h && j == len - 1) enc.final_states[0].at<double>({row, k}) += delta;
        if (rnn && k >= h && j == 0) enc.final_states[1].at<double>({row, k - h}) += delta;
      };
      const double fd = fd_norm(d, move, [&] { return stepped_loss(*model_, enc, batch_); });
      expect_close(norms[b][size_t(j)], fd,
                   "sentence " + std::to_string(b) + " position " + std::to_string(j));
      if (GetParam().config.attention == AttentionKind::None && j > 0 && j < len - 1) {
        EXPECT_EQ(norms[b][size_t(j)], 0.0) << "the bottleneck's decoder reads only the ends";
      }
    }
  }
}

TEST_P(GradientFlowTest, ASentenceGivesTheSameNormsAloneAsInAPaddedBatch) {
  for (const GradientSite site : {GradientSite::EncoderInput, GradientSite::EncoderOutput}) {
    const auto together = source_gradient_norms(*model_, batch_, site);
    for (int64_t b = 0; b < 3; ++b) {
      const auto alone = source_gradient_norms(*model_, batch_of(pairs_, {b}), site);
      ASSERT_EQ(alone.size(), 1u);
      ASSERT_EQ(alone[0].size(), together[size_t(b)].size());
      for (size_t j = 0; j < alone[0].size(); ++j)
        EXPECT_NEAR(together[size_t(b)][j], alone[0][j], 1e-12 * std::max(1.0, alone[0][j]))
            << to_string(site) << " sentence " << b << " position " << j;
    }
    // Batched by gradient_norms in any size: the same rows, in order.
    const auto by_one = gradient_norms(*model_, pairs_, site, 1);
    const auto by_two = gradient_norms(*model_, pairs_, site, 2);
    ASSERT_EQ(by_one.size(), 3u);
    for (size_t b = 0; b < 3; ++b) {
      ASSERT_EQ(by_two[b].size(), by_one[b].size());
      for (size_t j = 0; j < by_one[b].size(); ++j)
        EXPECT_NEAR(by_two[b][j], by_one[b][j], 1e-12 * std::max(1.0, by_one[b][j]));
    }
  }
}

TEST_P(GradientFlowTest, LeavesTheModelAsItFoundIt) {
  ASSERT_TRUE(model_->training());
  const Tensor before = model_->parameters().get("encoder.embeddings.weight").value().clone();
  source_gradient_norms(*model_, batch_, GradientSite::EncoderInput);
  EXPECT_TRUE(model_->training());
  EXPECT_EQ(autograd::tape_size(), 0u);
  const Tensor after = model_->parameters().get("encoder.embeddings.weight").value();
  EXPECT_EQ(before.to_vector<double>(), after.to_vector<double>());
  const Tensor grad = model_->parameters().get("encoder.embeddings.weight").grad();
  for (const double g : grad.to_vector<double>()) ASSERT_EQ(g, 0.0);
}

TEST_P(GradientFlowTest, TappedForwardGivesTheSameLogits) {
  model_->set_training(false);
  const Tensor src = batch_.src.to(DType::F64), tgt = batch_.tgt_in.to(DType::F64);
  models::EncoderTaps taps;
  const auto a =
      model_->forward_train_tapped(src, batch_.src_lengths, tgt, batch_.tgt_lengths, taps);
  const auto b = model_->forward_train(src, batch_.src_lengths, tgt, batch_.tgt_lengths);
  autograd::clear_tape();
  EXPECT_EQ(a.value().to_vector<double>(), b.value().to_vector<double>());
  ASSERT_TRUE(taps.input.defined() && taps.memory.defined());
  EXPECT_EQ(taps.input.value().shape(), Shape({3, 6, 8}));  // [B, Ts, E]
  EXPECT_EQ(taps.final_states.size(),
            GetParam().config.type == ModelType::Rnn
                ? (GetParam().config.cell == models::CellType::Lstm ? 4u : 2u)
                : 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, GradientFlowTest, ::testing::ValuesIn(cases()),
                         [](const auto& p) { return p.param.name; });

TEST(GradientFlow, FloatModelsAndTheirBatchesWork) {
  ModelConfig c = tiny(ModelType::Rnn, AttentionKind::Additive, models::CellType::Gru);
  auto model = models::make_model(c, 3);  // float32, as qkv trains them
  const auto norms = gradient_norms(*model, sample_pairs(), GradientSite::EncoderInput, 2);
  ASSERT_EQ(norms.size(), 3u);
  for (const auto& row : norms)
    for (const double v : row) EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
}

TEST(GradientFlow, BadInputIsATypedError) {
  auto model = models::make_model(tiny(ModelType::Rnn, AttentionKind::None, models::CellType::Gru),
                                  3, DType::F64);
  data::TokenizedCorpus source_only = sample_pairs();
  source_only.target.clear();
  EXPECT_THROW(gradient_norms(*model, source_only, GradientSite::EncoderInput), ValueError);
  EXPECT_THROW(
      source_gradient_norms(*model, data::make_batch(source_only, std::vector<int64_t>{0}, {}),
                            GradientSite::EncoderInput),
      ValueError);
  EXPECT_THROW(gradient_norms(*model, sample_pairs(), GradientSite::EncoderInput, 0), ValueError);
  EXPECT_THROW(parse_gradient_site("middle"), ConfigError);
  EXPECT_EQ(parse_gradient_site("output"), GradientSite::EncoderOutput);
  const std::vector<std::vector<double>> nan = {{1.0, std::numeric_limits<double>::quiet_NaN()}};
  EXPECT_THROW(profile_by_position(nan), ValueError);
}

TEST(GradientFlow, ProfileAveragesOverTheSentencesThatReachAPosition) {
  const std::vector<std::vector<double>> norms = {{1, 2, 3}, {3, 4}, {5}};
  const PositionProfile p = profile_by_position(norms);
  EXPECT_EQ(p.sentences, (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(p.mean_norm, (std::vector<double>{3, 3, 3}));
  EXPECT_TRUE(profile_by_position({}).mean_norm.empty());
}

TEST(GradientFlow, CsvHasOneRowPerModelAndPosition) {
  const std::vector<GradientSeries> s = {{"rnn:none", {{0.5, 0.25}, {2, 1}}},
                                         {"a,b", {{1e-10}, {1}}}};
  EXPECT_EQ(gradient_csv(s),
            "model,position,sentences,mean_grad_norm\n"
            "rnn:none,1,2,0.5\nrnn:none,2,1,0.25\n\"a,b\",1,1,1e-10\n");
}

TEST(GradientFlow, ChartGroupsPositionsIntoBuckets) {
  PositionProfile p;
  for (int j = 0; j < 7; ++j) {
    p.mean_norm.push_back(double(j + 1));
    p.sentences.push_back(7 - j);
  }
  const std::vector<GradientSeries> s = {{"a", p}, {"b", p}};
  const viz::BucketChart one = gradient_chart(s, "t");
  EXPECT_EQ(one.buckets.size(), 7u);
  EXPECT_EQ(one.buckets[0], "1");
  const viz::BucketChart grouped = gradient_chart(s, "t", 3);  // width 3: 1-3, 4-6, 7
  EXPECT_EQ(grouped.buckets, (std::vector<std::string>{"1-3", "4-6", "7"}));
  EXPECT_EQ(grouped.counts, (std::vector<int64_t>{7, 4, 1}));
  // (1·7 + 2·6 + 3·5) / 18: every (sentence, position) in the bucket weighs the same.
  EXPECT_DOUBLE_EQ(*grouped.series[0].values[0], 34.0 / 18.0);
  EXPECT_EQ(grouped.kind, viz::ChartKind::Line);
  viz::validate(grouped);
  const std::vector<GradientSeries> differ = {{"a", p}, {"b", {{1.0}, {1}}}};
  const viz::BucketChart mixed = gradient_chart(differ, "t");
  EXPECT_TRUE(mixed.counts.empty());
  EXPECT_FALSE(mixed.series[1].values[1].has_value());
  EXPECT_THROW(gradient_chart({}, "t"), ValueError);
}

TEST(GradientFlow, TableSharesTheSentenceCountOnlyWhenEverySeriesHasIt) {
  const PositionProfile two{{0.5, 0.25}, {2, 1}};
  const std::vector<GradientSeries> same = {{"rnn:none", two}, {"rnn:additive", two}};
  const viz::ReportTable t = gradient_table(same);
  EXPECT_EQ(t.columns,
            (std::vector<std::string>{"position", "sentences", "rnn:none", "rnn:additive"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"2", "1", "0.25", "0.25"}));
  const std::vector<GradientSeries> differ = {{"a", two}, {"b", {{1e-5}, {3}}}};
  const viz::ReportTable d = gradient_table(differ);
  EXPECT_EQ(d.columns, (std::vector<std::string>{"position", "n a", "a", "n b", "b"}));
  EXPECT_EQ(d.rows[0], (std::vector<std::string>{"1", "2", "0.5", "3", "1e-05"}));
  EXPECT_EQ(d.rows[1], (std::vector<std::string>{"2", "1", "0.25", "0", "-"}));
}

// The limits are checked before anything is loaded, naming the fields.
TEST(GradientFlow, MeasuringRefusesLimitsThatLeaveNothing) {
  const data::ParallelCorpus corpus;
  EXPECT_TRUE(testing::throws_with<FieldError>(
      [&] { measure_gradient_flow("no-such-model", corpus, {.min_length = 5, .max_length = 4}); },
      {"min_length 5 exceeds max_length 4"}));
  EXPECT_TRUE(testing::throws_with<FieldError>(
      [&] { measure_gradient_flow("no-such-model", corpus, {.mini_batch = 0}); },
      {"mini_batch 0 must be >= 1"}));
  EXPECT_TRUE(testing::throws_with<IoError>(
      [&] { measure_gradient_flow("no-such-model", corpus, {}); }, {"no-such-model"}));
}

}  // namespace
}  // namespace qkv::experiment
