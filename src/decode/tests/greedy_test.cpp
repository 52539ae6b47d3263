// Greedy decoding: a scripted model checks the protocol (BOS first, each output fed back,
// EOS ends a row and is not returned, finished rows leave the state, the length limit),
// and real models check that a batch decodes as its rows do one by one.
#include "qkv/decode/greedy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"

namespace qkv::decode {
namespace {

constexpr int64_t kVocab = 8;  // 0 pad, 1 unk, 2 bos, 3 eos, 4..7 words

// Row b emits script[b][t] at step t, then 5 forever (never EOS). Checks that the ids
// fed back are BOS and then its own previous outputs.
class ScriptedModel final : public models::Seq2Seq {
 public:
  explicit ScriptedModel(std::vector<std::vector<int32_t>> script) : script_(std::move(script)) {
    config_.vocab_size = kVocab;
  }

  struct State final : models::DecoderState {
    std::vector<int64_t> rows;  // input row of each state row
    int64_t t = 0;
    int64_t batch_size() const noexcept override { return int64_t(rows.size()); }
    int64_t steps() const noexcept override { return t; }
    void reorder(std::span<const int64_t> indices) override {
      std::vector<int64_t> next;
      for (int64_t i : indices) next.push_back(rows.at(size_t(i)));
      rows = next;
    }
  };

  models::EncoderOutput encode(const Tensor& src, std::span<const int64_t> lengths) override {
    return {Tensor::zeros({src.dim(0), src.dim(1), 1}), {lengths.begin(), lengths.end()}, {}};
  }
  std::unique_ptr<models::DecoderState> initial_state(const models::EncoderOutput& e) override {
    auto s = std::make_unique<State>();
    for (size_t b = 0; b < e.lengths.size(); ++b) s->rows.push_back(int64_t(b));
    return s;
  }
  models::StepOutput step(const Tensor& prev_ids, models::DecoderState& base, bool,
                          const models::AttentionSelection&) override {
    auto& s = dynamic_cast<State&>(base);
    EXPECT_EQ(prev_ids.dim(0), s.batch_size());
    rows_per_step.push_back(s.batch_size());
    Tensor lp = Tensor::full({s.batch_size(), kVocab}, -10.0);
    for (int64_t i = 0; i < s.batch_size(); ++i) {
      const auto& row = script_[size_t(s.rows[size_t(i)])];
      const int32_t expected_prev = s.t == 0 ? 2 : token(row, s.t - 1);
      EXPECT_EQ(prev_ids.data<float>()[i], float(expected_prev)) << "row " << s.rows[size_t(i)];
      lp.data<float>()[i * kVocab + token(row, s.t)] = -0.1f;
    }
    ++s.t;
    return {lp, Tensor()};
  }
  autograd::Variable forward_train(const Tensor&, std::span<const int64_t>, const Tensor&,
                                   std::span<const int64_t>) override {
    ADD_FAILURE() << "greedy decoding must not call forward_train";
    return {};
  }
  void set_training(bool) override {}
  bool training() const noexcept override { return false; }
  nn::ParameterStore& parameters() noexcept override { return store_; }
  const nn::ParameterStore& parameters() const noexcept override { return store_; }
  const models::ModelConfig& config() const noexcept override { return config_; }

  std::vector<int64_t> rows_per_step;

 private:
  static int32_t token(const std::vector<int32_t>& row, int64_t t) {
    return t < int64_t(row.size()) ? row[size_t(t)] : 5;
  }
  std::vector<std::vector<int32_t>> script_;
  models::ModelConfig config_;
  nn::ParameterStore store_;
};

Tensor dummy_src(int64_t b) {
  return Tensor::full({b, 2}, 4.0);
}

TEST(GreedyDecode, FollowsTheScriptStopsAtEosAndDropsFinishedRows) {
  ScriptedModel model({{4, 5, 3}, {3}, {6, 7, 6, 4, 3}});
  const std::vector<int64_t> lengths = {2, 2, 2};
  const auto out = greedy_decode(model, dummy_src(3), lengths, 10);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], (std::vector<int32_t>{4, 5}));
  EXPECT_TRUE(out[1].empty());
  EXPECT_EQ(out[2], (std::vector<int32_t>{6, 7, 6, 4}));
  // Row 1 ends at step 0, row 0 at step 2, row 2 at step 4.
  EXPECT_EQ(model.rows_per_step, (std::vector<int64_t>{3, 2, 2, 1, 1}));
}

TEST(GreedyDecode, CutsRowsAtMaxLength) {
  ScriptedModel model({{4, 3}, {}});  // row 1 never ends
  const std::vector<int64_t> lengths = {2, 2};
  const auto out = greedy_decode(model, dummy_src(2), lengths, 4);
  EXPECT_EQ(out[0], (std::vector<int32_t>{4}));
  EXPECT_EQ(out[1], (std::vector<int32_t>{5, 5, 5, 5}));
  EXPECT_EQ(model.rows_per_step.size(), 4u);
}

// Enough rows that each step's argmaxes are split over the pool (chunks of 4,096 rows at
// V 8): every row still follows its own script, for 1 and 2 threads.
TEST(GreedyDecode, ManyRowsFollowTheirScriptsForAnyThreadCount) {
  const int saved = num_threads();
  constexpr int64_t kRows = 9000;
  std::vector<std::vector<int32_t>> script;
  for (int64_t b = 0; b < kRows; ++b) {
    std::vector<int32_t> row;
    for (int64_t t = 0; t < b % 4; ++t) row.push_back(int32_t(4 + (b + t) % 4));
    row.push_back(3);
    script.push_back(row);
  }
  const std::vector<int64_t> lengths(size_t(kRows), 2);
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    ScriptedModel model(script);
    const auto out = greedy_decode(model, dummy_src(kRows), lengths, 10);
    ASSERT_EQ(out.size(), size_t(kRows));
    for (int64_t b = 0; b < kRows; ++b)
      ASSERT_EQ(out[size_t(b)],
                std::vector<int32_t>(script[size_t(b)].begin(), script[size_t(b)].end() - 1))
          << "row " << b << ", " << threads << " threads";
  }
  set_num_threads(saved);
}

TEST(GreedyDecode, RejectsANonPositiveMaxLength) {
  ScriptedModel model(std::vector<std::vector<int32_t>>{{3}});
  const std::vector<int64_t> lengths = {2};
  EXPECT_THROW(greedy_decode(model, dummy_src(1), lengths, 0), ValueError);
}

models::ModelConfig tiny(models::ModelType type) {
  models::ModelConfig c;
  c.type = type;
  c.attention = type == models::ModelType::Rnn ? models::AttentionKind::General
                                               : models::AttentionKind::ScaledDot;
  c.cell = models::CellType::Gru;
  c.vocab_size = 13;
  c.dim_emb = 8;
  c.dim_rnn = 6;
  c.enc_depth = 1;
  c.dec_depth = 2;
  c.heads = 2;
  c.dim_ffn = 12;
  c.dropout = 0.0;
  c.max_positions = 64;
  return c;
}

// Padding must not change what a row decodes to: a batch equals its rows alone.
TEST(GreedyDecode, ABatchDecodesAsItsRowsAlone) {
  for (const auto type : {models::ModelType::Rnn, models::ModelType::Transformer}) {
    const auto model = models::make_model(tiny(type), 7);
    model->set_training(false);
    const std::vector<std::vector<float>> rows = {{4, 9, 11, 3}, {7, 3}, {12, 5, 3}};
    Tensor src = Tensor::zeros({3, 4});
    std::vector<int64_t> lengths;
    for (size_t b = 0; b < rows.size(); ++b) {
      for (size_t t = 0; t < rows[b].size(); ++t) src.data<float>()[b * 4 + t] = rows[b][t];
      lengths.push_back(int64_t(rows[b].size()));
    }
    const auto batch = greedy_decode(*model, src, lengths, 9);
    for (size_t b = 0; b < rows.size(); ++b) {
      const Tensor one = Tensor::from({1, int64_t(rows[b].size())}, rows[b]);
      const std::vector<int64_t> len = {int64_t(rows[b].size())};
      EXPECT_EQ(greedy_decode(*model, one, len, 9).at(0), batch[b])
          << models::to_string(type) << " row " << b;
      EXPECT_LE(batch[b].size(), 9u);
    }
  }
}

}  // namespace
}  // namespace qkv::decode
