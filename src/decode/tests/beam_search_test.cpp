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

// log p(next | prev) from a fixed [V, V] table, whatever the source, plus `second_order`
// times the table's row of the id fed before prev: a state row remembers the ids it was
// fed, as a decoder's caches do, so a search that fed a row another hypothesis's id, or
// reordered the rows wrongly, scores its hypotheses differently from log_prob(). Counts
// the rows each reorder moves (rows_moved).
class MarkovModel final : public models::Seq2Seq {
 public:
  explicit MarkovModel(std::vector<std::vector<double>> table, double second_order = 0)
      : table_(std::move(table)), second_order_(second_order) {
    config_.vocab_size = int64_t(table_.size());
    config_.type = models::ModelType::Rnn;
    config_.attention = models::AttentionKind::None;
  }

  struct State final : models::DecoderState {
    std::vector<std::vector<int32_t>> fed;  // per row: the ids fed so far
    int64_t t = 0;
    int64_t* rows_moved = nullptr;
    int64_t batch_size() const noexcept override { return int64_t(fed.size()); }
    int64_t steps() const noexcept override { return t; }
    void reorder(std::span<const int64_t> indices) override {
      std::vector<std::vector<int32_t>> next;
      for (size_t i = 0; i < indices.size(); ++i) {
        EXPECT_LT(indices[i], batch_size());
        next.push_back(fed.at(size_t(indices[i])));
        *rows_moved += indices[i] != int64_t(i);
      }
      fed = std::move(next);
    }
  };

  models::EncoderOutput encode(const Tensor& src, std::span<const int64_t> lengths) override {
    return {Tensor::zeros({src.dim(0), src.dim(1), 1}), {lengths.begin(), lengths.end()}, {}};
  }
  std::unique_ptr<models::DecoderState> initial_state(const models::EncoderOutput& e) override {
    auto s = std::make_unique<State>();
    s->fed.resize(e.lengths.size());
    s->rows_moved = &rows_moved;
    return s;
  }
  models::StepOutput step(const Tensor& prev_ids, models::DecoderState& base, bool,
                          const models::AttentionSelection&) override {
    auto& s = dynamic_cast<State&>(base);
    const int64_t rows = s.batch_size();
    EXPECT_EQ(prev_ids.dim(0), rows);
    const auto v = int64_t(table_.size());
    Tensor lp = Tensor::zeros({rows, v});
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int32_t>& fed = s.fed[size_t(r)];
      const auto prev = int32_t(prev_ids.data<float>()[r]);
      const int32_t before = fed.empty() ? int32_t(config_.bos_id) : fed.back();
      fed.push_back(prev);
      for (int64_t j = 0; j < v; ++j) lp.data<float>()[r * v + j] = log_p(before, prev, j);
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
    auto before = int32_t(config_.bos_id), prev = before;
    for (const int32_t t : tokens) {
      sum += double(log_p(before, prev, t));
      before = prev;
      prev = t;
    }
    if (eos) sum += double(log_p(before, prev, config_.eos_id));
    return sum;
  }

  int64_t rows_moved = 0;  // by every search's reorders so far

 private:
  float log_p(int32_t before, int32_t prev, int64_t next) const {
    return float(table_[size_t(prev)][size_t(next)] +
                 second_order_ * table_[size_t(before)][size_t(next)]);
  }

  std::vector<std::vector<double>> table_;
  double second_order_ = 0;
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
      // second order: a row's scores depend on the ids fed to it before, which only the
      // right reorders keep with it.
      MarkovModel model(random_table(seed), seed == 3 ? 0.0 : 0.5);
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

// A hypothesis that continues its parent decodes in its parent's state row, whatever its
// rank: rows whose hypotheses only change rank are not copied (a Transformer's reorder
// copies each moved row's self-attention keys and values of every step so far).
TEST(BeamSearch, AHypothesisContinuingItsParentKeepsItsRow) {
  // BOS -> 4, 5, 6, 7 (.4, .3, .2, .1); then each id repeats itself, 4 with .05 and the
  // others with .9, so after the first step the ranks become 5, 6, 7, 4 while every
  // hypothesis has one child. Everything else (EOS included) is 1e-6.
  const double lo = std::log(1e-6);
  std::vector<std::vector<double>> t(8, std::vector<double>(8, lo));
  t[2][4] = std::log(0.4), t[2][5] = std::log(0.3), t[2][6] = std::log(0.2),
  t[2][7] = std::log(0.1);
  t[4][4] = std::log(0.05), t[5][5] = t[6][6] = t[7][7] = std::log(0.9);
  MarkovModel model(t, 0.25);
  const std::vector<int64_t> lengths = {2};
  const BeamSearchOptions o{
      .beam_size = 4, .n_best = 4, .normalize = 0, .max_length_factor = 0, .max_length_extra = 5};
  const auto got = beam_search(model, one_source(), lengths, o).at(0);
  ASSERT_EQ(got.size(), 4u);
  const std::vector<int32_t> want_first = {5, 6, 7, 4};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, std::vector<int32_t>(5, want_first[i])) << "rank " << i;
    EXPECT_FALSE(got[i].finished);
    EXPECT_NEAR(got[i].log_prob, model.log_prob(got[i].tokens, false), 1e-9) << "rank " << i;
  }
  // Only the first step's expansion from one row to four moves rows (3 of them).
  EXPECT_EQ(model.rows_moved, 3);
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
