// Beam search: a Markov "model" whose exhaustive search is known checks the search
// itself (the n-best equals brute force when the beam holds every sequence; a wider beam
// beats greedy where greedy is myopic), and tiny random models of every kind check the
// laws: beam 1 is greedy, scores are forced-decoding scores, a sentence decodes the same
// alone and in a batch of 64, n-best is sorted, the length limit holds.
#include "qkv/decode/beam_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/rng.h"
#include "qkv/decode/force_decode.h"
#include "qkv/decode/greedy.h"

namespace qkv::decode {
namespace {

// log p(next | prev) from a fixed [V, V] table, whatever the source: the decoder state
// is only the step count, and the row order (checked against the fed ids).
class MarkovModel final : public models::Seq2Seq {
 public:
  explicit MarkovModel(std::vector<std::vector<double>> table) : table_(std::move(table)) {
    config_.vocab_size = int64_t(table_.size());
    config_.type = models::ModelType::Rnn;
    config_.attention = models::AttentionKind::None;
  }

  struct State final : models::DecoderState {
    int64_t rows = 0, t = 0;
    int64_t batch_size() const noexcept override { return rows; }
    int64_t steps() const noexcept override { return t; }
    void reorder(std::span<const int64_t> indices) override {
      for (const int64_t i : indices) EXPECT_LT(i, rows);
      rows = int64_t(indices.size());
    }
  };

  models::EncoderOutput encode(const Tensor& src, std::span<const int64_t> lengths) override {
    return {Tensor::zeros({src.dim(0), src.dim(1), 1}), {lengths.begin(), lengths.end()}, {}};
  }
  std::unique_ptr<models::DecoderState> initial_state(const models::EncoderOutput& e) override {
    auto s = std::make_unique<State>();
    s->rows = int64_t(e.lengths.size());
    return s;
  }
  models::StepOutput step(const Tensor& prev_ids, models::DecoderState& base, bool,
                          const models::AttentionSelection&) override {
    auto& s = dynamic_cast<State&>(base);
    EXPECT_EQ(prev_ids.dim(0), s.rows);
    const auto v = int64_t(table_.size());
    Tensor lp = Tensor::zeros({s.rows, v});
    for (int64_t r = 0; r < s.rows; ++r) {
      const auto prev = size_t(prev_ids.data<float>()[r]);
      for (int64_t j = 0; j < v; ++j) lp.data<float>()[r * v + j] = float(table_[prev][size_t(j)]);
    }
    ++s.t;
    return {lp, Tensor()};
  }
  autograd::Variable forward_train(const Tensor&, std::span<const int64_t>, const Tensor&,
                                   std::span<const int64_t>) override {
    ADD_FAILURE() << "beam search must not call forward_train";
    return {};
  }
  void set_training(bool) override {}
  bool training() const noexcept override { return false; }
  nn::ParameterStore& parameters() noexcept override { return store_; }
  const nn::ParameterStore& parameters() const noexcept override { return store_; }
  const models::ModelConfig& config() const noexcept override { return config_; }

  // log p of `tokens` (+ EOS when `eos`), as the table says.
  double log_prob(const std::vector<int32_t>& tokens, bool eos) const {
    double sum = 0;
    size_t prev = size_t(config_.bos_id);
    for (const int32_t t : tokens) {
      sum += double(float(table_[prev][size_t(t)]));
      prev = size_t(t);
    }
    if (eos) sum += double(float(table_[prev][size_t(config_.eos_id)]));
    return sum;
  }

 private:
  std::vector<std::vector<double>> table_;
  models::ModelConfig config_;
  nn::ParameterStore store_;
};

// A random table over 6 ids (0 pad, 1 unk, 2 bos, 3 eos, 4, 5): rows are log-softmaxes.
std::vector<std::vector<double>> random_table(uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<double>> table(6, std::vector<double>(6));
  for (auto& row : table) {
    double z = 0;
    for (double& x : row) z += std::exp(x = 3.0 * rng.uniform());
    for (double& x : row) x -= std::log(z);
  }
  return table;
}

struct Scored {
  std::vector<int32_t> tokens;
  bool eos;
  double score;
};

// Every sequence the search can produce within `limit` tokens (EOS-finished, or cut at
// the limit), scored as the beam scores them (log p / length^alpha), best first.
std::vector<Scored> exhaustive(const MarkovModel& m, int64_t limit, double alpha) {
  std::vector<Scored> all;
  std::vector<int32_t> prefix;
  const auto score = [&](bool eos) {
    return m.log_prob(prefix, eos) / std::pow(double(prefix.size() + (eos ? 1 : 0)), alpha);
  };
  const std::function<void()> grow = [&] {
    if (int64_t(prefix.size()) == limit) {
      all.push_back({prefix, false, score(false)});
      return;
    }
    all.push_back({prefix, true, score(true)});
    for (int32_t t = 0; t < 6; ++t) {
      if (t == 3) continue;  // EOS
      prefix.push_back(t);
      grow();
      prefix.pop_back();
    }
  };
  grow();
  std::stable_sort(all.begin(), all.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  return all;
}

Tensor one_source() {
  return Tensor::full({1, 2}, 4.0);
}

TEST(BeamSearch, AWideEnoughBeamIsExhaustiveSearch) {
  for (const uint64_t seed : {1u, 2u, 3u}) {
    for (const double alpha : {0.0, 0.6, 1.0}) {
      MarkovModel model(random_table(seed));
      const int64_t limit = 3;
      // 5 non-EOS ids: at most 5 + 25 + 125 live hypotheses, all kept.
      const BeamSearchOptions o{.beam_size = 400,
                                .n_best = 10,
                                .normalize = alpha,
                                .max_length_factor = 0,
                                .max_length_extra = limit};
      const std::vector<int64_t> lengths = {2};
      const auto got = beam_search(model, one_source(), lengths, o).at(0);
      const auto want = exhaustive(model, limit, alpha);
      ASSERT_EQ(got.size(), 10u);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i].score, want[i].score, 1e-9) << "seed " << seed << " rank " << i;
        EXPECT_EQ(got[i].tokens, want[i].tokens) << "seed " << seed << " rank " << i;
        EXPECT_EQ(got[i].finished, want[i].eos);
      }
    }
  }
}

TEST(BeamSearch, AWiderBeamFindsWhatGreedyMisses) {
  // From BOS, 4 is likelier than 5, but after 4 only poor tokens follow (EOS first on
  // the tie); after 5 a sure EOS. Greedy takes 4 then EOS (log .6 + log .1); beam 2 finds
  // 5 then EOS (log .4 + log .9).
  const double lo = std::log(1e-6);
  std::vector<std::vector<double>> t(6, std::vector<double>(6, lo));
  t[2][4] = std::log(0.6), t[2][5] = std::log(0.4);
  t[4][3] = std::log(0.1), t[4][4] = std::log(0.1);
  t[5][3] = std::log(0.9), t[5][5] = std::log(0.1);
  MarkovModel model(t);
  const std::vector<int64_t> lengths = {2};
  BeamSearchOptions o{
      .beam_size = 1, .normalize = 0, .max_length_factor = 0, .max_length_extra = 2};
  EXPECT_EQ(beam_search(model, one_source(), lengths, o)[0][0].tokens, (std::vector<int32_t>{4}));
  o.beam_size = 2;
  const auto h = beam_search(model, one_source(), lengths, o)[0][0];
  EXPECT_EQ(h.tokens, (std::vector<int32_t>{5}));
  EXPECT_TRUE(h.finished);
  EXPECT_NEAR(h.log_prob, std::log(0.4) + std::log(0.9), 1e-6);
  ASSERT_EQ(h.token_log_probs.size(), 2u);
}

TEST(BeamSearch, RejectsBadOptions) {
  MarkovModel model(random_table(1));
  const std::vector<int64_t> lengths = {2};
  const BeamSearchOptions bad[] = {
      {.beam_size = 0},
      {.beam_size = 2, .n_best = 3},
      {.n_best = 0},
      {.normalize = -1},
      {.normalize = NAN},
      {.coverage_penalty = -0.1},
      {.max_length_factor = -1},
      {.max_length_extra = -1},
      {.max_length = -5},
  };
  for (const BeamSearchOptions& o : bad)
    EXPECT_THROW(beam_search(model, one_source(), lengths, o), ConfigError);
  // The Markov model does not attend: no coverage penalty.
  EXPECT_THROW(beam_search(model, one_source(), lengths, {.coverage_penalty = 0.2}), ConfigError);
}

TEST(BeamSearch, MaxTargetLength) {
  models::ModelConfig rnn;
  rnn.type = models::ModelType::Rnn;
  rnn.attention = models::AttentionKind::General;
  EXPECT_EQ(max_target_length({.max_length_factor = 2, .max_length_extra = 5}, 7, rnn), 19);
  EXPECT_EQ(max_target_length({.max_length_factor = 1.5, .max_length_extra = 0}, 5, rnn), 7);
  EXPECT_EQ(max_target_length({.max_length_factor = 2, .max_length = 10}, 7, rnn), 10);
  EXPECT_EQ(max_target_length({.max_length_factor = 0, .max_length_extra = 0}, 7, rnn), 1);
  EXPECT_EQ(max_target_length({.max_length_factor = 1e300}, 7, rnn), (int64_t{1} << 40) + 5);
  models::ModelConfig transformer;
  transformer.max_positions = 12;
  EXPECT_EQ(max_target_length({.max_length_factor = 2}, 7, transformer), 12);
}

// The one check every front end runs before reading input: each refusal names the field
// as the front ends take it (the CLI renders {n_best} as --n-best, the server as 'n_best').
TEST(Validate, AgainstTheModelNamesTheField) {
  models::ModelConfig transformer;
  transformer.dec_depth = 2;
  transformer.heads = 4;
  models::ModelConfig bottleneck;
  bottleneck.type = models::ModelType::Rnn;
  bottleneck.attention = models::AttentionKind::None;
  const auto fields_of = [](const BeamSearchOptions& o, const models::ModelConfig& c) {
    try {
      validate(o, c);
    } catch (const FieldError& e) {
      return e.what() + std::string(" | ") + e.fields().front();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(fields_of({.beam_size = 4, .n_best = 5}, transformer),
            "n_best 5 exceeds beam_size 4; the search keeps only beam-size hypotheses (raise "
            "beam_size) | n_best");
  EXPECT_EQ(fields_of({.beam_size = 0}, transformer), "beam_size 0 must be >= 1 | beam_size");
  EXPECT_EQ(fields_of({.coverage_penalty = 0.2}, bottleneck),
            "coverage_penalty 0.2: the model is an rnn without attention, which has no coverage "
            "| coverage_penalty");
  EXPECT_EQ(fields_of({.coverage_penalty = 0.2}, transformer), "accepted");
  BeamSearchOptions o;
  o.attention = {2, -1};
  EXPECT_EQ(fields_of(o, transformer),
            "alignment_layer 2: the model has 2 attention layer(s): 0..1, or -1 for the last | "
            "alignment_layer");
  o.attention = {1, 4};
  EXPECT_EQ(fields_of(o, transformer),
            "alignment_head 4: the model has 4 attention head(s): 0..3, or -1 for their mean | "
            "alignment_head");
  o.attention = {0, 0};  // an rnn's one attention
  EXPECT_EQ(fields_of(o, bottleneck), "accepted");
  o.attention = {1, -1};
  EXPECT_EQ(fields_of(o, bottleneck).substr(0, 38), "alignment_layer 1: the model has 1 att");
}

}  // namespace
}  // namespace qkv::decode
