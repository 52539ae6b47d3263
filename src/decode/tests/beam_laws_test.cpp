// Laws of beam search on tiny random models of every kind (rnn without attention, Luong
// and Bahdanau rnns, Transformer): beam 1 is greedy; a hypothesis's scores are the
// forced-decoding scores of its tokens; a sentence decodes the same alone and in a batch
// of 64; n-best is sorted; the length limit holds; the attention rows kept are the ones
// forced decoding reports.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>

#include "qkv/base/error.h"
#include "qkv/base/rng.h"
#include "qkv/decode/beam_search.h"
#include "qkv/decode/force_decode.h"
#include "qkv/decode/greedy.h"

namespace qkv::decode {
namespace {

using models::attends;
using models::AttentionKind;
using models::CellType;
using models::ModelType;

constexpr int64_t kVocab = 13;  // 0 pad, 1 unk, 2 bos, 3 eos, 4..12 words
// Per token: forward_train and step compute the same function along different paths
// (whole sequence vs incremental), so float32 rounding differs by a few ulps of the
// activations; 1e-4 is far above that and far below any real mistake (a wrong token or
// position changes a log-probability by ~0.1 in these models).
constexpr double kTolerance = 1e-4;

struct Variant {
  std::string name;
  models::ModelConfig config;
};
void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

models::ModelConfig tiny(ModelType type, AttentionKind attention, CellType cell) {
  models::ModelConfig c;
  c.type = type;
  c.attention = attention;
  c.cell = cell;
  c.vocab_size = kVocab;
  c.dim_emb = 8;
  c.dim_rnn = 6;
  c.enc_depth = 1;
  c.dec_depth = 2;
  c.heads = 2;
  c.dim_ffn = 12;
  c.dropout = 0.1;  // switched off by set_training(false)
  c.max_positions = 64;
  return c;
}

std::vector<Variant> variants() {
  return {{"rnn_none", tiny(ModelType::Rnn, AttentionKind::None, CellType::Lstm)},
          {"rnn_general", tiny(ModelType::Rnn, AttentionKind::General, CellType::Gru)},
          {"rnn_additive", tiny(ModelType::Rnn, AttentionKind::Additive, CellType::Gru)},
          {"transformer", tiny(ModelType::Transformer, AttentionKind::ScaledDot, CellType::Lstm)}};
}

// n random sentences of 1..8 words, each ending in EOS as the batcher gives them.
std::vector<std::vector<float>> random_sentences(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<float>> out(static_cast<size_t>(n));
  for (auto& s : out) {
    const uint64_t words = 1 + rng.uniform_int(8);
    for (uint64_t i = 0; i < words; ++i) s.push_back(float(4 + rng.uniform_int(kVocab - 4)));
    s.push_back(3.0f);
  }
  return out;
}

struct Source {
  Tensor src;  // [B, Ts], padded with 0
  std::vector<int64_t> lengths;
};

Source pad(const std::vector<std::vector<float>>& rows) {
  size_t width = 1;
  for (const auto& r : rows) width = std::max(width, r.size());
  std::vector<float> ids(rows.size() * width, 0.0f);
  Source s;
  for (size_t b = 0; b < rows.size(); ++b) {
    std::copy(rows[b].begin(), rows[b].end(), ids.begin() + ptrdiff_t(b * width));
    s.lengths.push_back(int64_t(rows[b].size()));
  }
  s.src = Tensor::from({int64_t(rows.size()), int64_t(width)}, ids);
  return s;
}

class BeamLaws : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    model_ = models::make_model(GetParam().config, 11);
    model_->set_training(false);
  }
  std::unique_ptr<models::Seq2Seq> model_;
};

TEST_P(BeamLaws, BeamOneIsGreedy) {
  const Source s = pad(random_sentences(8, 1));
  const int64_t limit = 6;
  const BeamSearchOptions o{.beam_size = 1, .max_length_factor = 0, .max_length_extra = limit};
  const auto beams = beam_search(*model_, s.src, s.lengths, o);
  const auto greedy = greedy_decode(*model_, s.src, s.lengths, limit);
  std::vector<std::vector<int32_t>> tokens;
  for (const auto& b : beams) tokens.push_back(b.at(0).tokens);
  ASSERT_EQ(tokens, greedy);
  const auto forced = force_decode(*model_, s.src, s.lengths, tokens);
  for (size_t b = 0; b < beams.size(); ++b) {
    const Hypothesis& h = beams[b][0];
    // A cut hypothesis has no EOS step: compare the tokens' log-probabilities only.
    double sum = 0;
    for (size_t t = 0; t < h.token_log_probs.size(); ++t) sum += forced[b][t];
    EXPECT_NEAR(h.log_prob, sum, kTolerance) << "sentence " << b;
    EXPECT_EQ(h.finished, h.tokens.size() < size_t(limit));
  }
}

TEST_P(BeamLaws, ScoresAreForcedDecodingScoresAndNBestIsSorted) {
  const std::vector<std::vector<float>> rows = random_sentences(6, 2);
  const Source s = pad(rows);
  const BeamSearchOptions o{.beam_size = 5, .n_best = 5, .normalize = 0.6, .keep_attention = true};
  const auto beams = beam_search(*model_, s.src, s.lengths, o);
  for (size_t b = 0; b < beams.size(); ++b) {
    const auto& nbest = beams[b];
    ASSERT_FALSE(nbest.empty());
    ASSERT_LE(nbest.size(), 5u);
    const int64_t limit = max_target_length(o, s.lengths[b], model_->config());
    std::vector<std::vector<int32_t>> targets;
    for (const Hypothesis& h : nbest) targets.push_back(h.tokens);
    const Source same = pad(std::vector<std::vector<float>>(nbest.size(), rows[b]));
    const auto forced = force_decode(*model_, same.src, same.lengths, targets);
    for (size_t i = 0; i < nbest.size(); ++i) {
      const Hypothesis& h = nbest[i];
      if (i > 0) {
        EXPECT_GE(nbest[i - 1].score, h.score) << "sentence " << b << " rank " << i;
      }
      EXPECT_LE(int64_t(h.tokens.size()), limit);
      if (!h.finished) {
        EXPECT_EQ(int64_t(h.tokens.size()), limit);
      }
      ASSERT_EQ(h.token_log_probs.size(), h.tokens.size() + (h.finished ? 1 : 0));
      double sum = 0;
      for (size_t t = 0; t < h.token_log_probs.size(); ++t) {
        EXPECT_NEAR(h.token_log_probs[t], forced[i][t], kTolerance) << "token " << t;
        sum += forced[i][t];
      }
      EXPECT_NEAR(h.log_prob, sum, kTolerance);
      const auto steps = double(h.token_log_probs.size());
      EXPECT_NEAR(h.score, h.log_prob / std::pow(steps, 0.6), 1e-12);
      EXPECT_EQ(h.source_length, s.lengths[b]);
      if (!attends(model_->config())) {
        EXPECT_TRUE(h.attention.empty());
        continue;
      }
      ASSERT_EQ(h.attention.size(), h.token_log_probs.size() * size_t(s.lengths[b]));
      for (size_t r = 0; r < h.token_log_probs.size(); ++r) {
        double row = 0;
        for (int64_t j = 0; j < s.lengths[b]; ++j) row += h.attention[r * size_t(s.lengths[b]) + j];
        EXPECT_NEAR(row, 1.0, 1e-4) << "attention row " << r;
      }
    }
  }
}

TEST_P(BeamLaws, ASentenceDecodesAloneAsInABatchOf64) {
  const std::vector<std::vector<float>> rows = random_sentences(64, 3);
  const Source s = pad(rows);
  const BeamSearchOptions o{.beam_size = 4, .n_best = 2};
  const auto batch = beam_search(*model_, s.src, s.lengths, o);
  ASSERT_EQ(batch.size(), 64u);
  for (size_t b = 0; b < rows.size(); ++b) {
    const Source one = pad({rows[b]});
    const auto alone = beam_search(*model_, one.src, one.lengths, o).at(0);
    ASSERT_EQ(alone.size(), batch[b].size()) << "sentence " << b;
    for (size_t i = 0; i < alone.size(); ++i) {
      EXPECT_EQ(alone[i].tokens, batch[b][i].tokens) << "sentence " << b << " rank " << i;
      EXPECT_NEAR(alone[i].score, batch[b][i].score, 1e-5) << "sentence " << b;
    }
  }
}

TEST_P(BeamLaws, CoveragePenaltyIsAddedFromTheAttentionRows) {
  const Source s = pad(random_sentences(4, 4));
  const BeamSearchOptions o{.beam_size = 3,
                            .n_best = 3,
                            .normalize = 1.0,
                            .coverage_penalty = 0.4,
                            .keep_attention = true};
  if (!attends(model_->config())) {
    EXPECT_THROW(beam_search(*model_, s.src, s.lengths, o), ConfigError);
    return;
  }
  const auto beams = beam_search(*model_, s.src, s.lengths, o);
  for (const auto& nbest : beams) {
    for (const Hypothesis& h : nbest) {
      const auto steps = h.token_log_probs.size();
      double penalty = 0;
      for (int64_t j = 0; j < h.source_length; ++j) {
        double c = 0;
        for (size_t r = 0; r < steps; ++r)
          c += h.attention[r * size_t(h.source_length) + size_t(j)];
        penalty += std::log(std::clamp(c, 1e-6, 1.0));
      }
      EXPECT_NEAR(h.score, h.log_prob / double(steps) + 0.4 * penalty, 1e-9);
      EXPECT_LE(penalty, 0.0);
    }
  }
}

TEST_P(BeamLaws, KeptAttentionIsForcedAttention) {
  const models::ModelConfig& c = model_->config();
  // A Transformer reports any layer and head: check one that is not the default.
  const models::AttentionSelection which = c.type == ModelType::Transformer
                                               ? models::AttentionSelection{0, 1}
                                               : models::AttentionSelection{};
  const std::vector<std::vector<float>> rows = random_sentences(5, 5);
  const Source s = pad(rows);
  const auto beams = beam_search(*model_, s.src, s.lengths,
                                 {.beam_size = 3, .keep_attention = true, .attention = which});
  std::vector<std::vector<int32_t>> targets;
  for (const auto& b : beams) targets.push_back(b[0].tokens);
  const auto forced = forced_attention(*model_, s.src, s.lengths, targets, which);
  ASSERT_EQ(forced.size(), rows.size());
  for (size_t b = 0; b < rows.size(); ++b) {
    const Hypothesis& h = beams[b][0];
    if (!attends(c)) {
      EXPECT_TRUE(forced[b].empty());
      continue;
    }
    // forced_attention always includes the EOS step; a cut hypothesis has none.
    ASSERT_EQ(forced[b].size(), (h.tokens.size() + 1) * size_t(s.lengths[b]));
    ASSERT_LE(h.attention.size(), forced[b].size());
    for (size_t i = 0; i < h.attention.size(); ++i)
      EXPECT_NEAR(h.attention[i], forced[b][i], 1e-5) << "sentence " << b << " value " << i;
  }
}

// One pass for every distribution gives, block by block, what a pass per (layer, head)
// gives; the targets differ in length so rows end at different steps.
TEST_P(BeamLaws, AllForcedAttentionIsEachSelectionInOnePass) {
  const models::ModelConfig& c = model_->config();
  const Source s = pad(random_sentences(4, 9));
  const std::vector<std::vector<int32_t>> targets = {{4, 5, 6}, {}, {7, 8, 9, 10, 11}, {12}};
  const AllForcedAttention all = forced_attention_all(*model_, s.src, s.lengths, targets);
  ASSERT_EQ(all.rows.size(), targets.size());
  if (!attends(c)) {
    EXPECT_EQ(all.distributions, 0);
    for (const auto& r : all.rows) EXPECT_TRUE(r.empty());
    return;
  }
  std::vector<models::AttentionSelection> each = {{}};
  if (c.type == ModelType::Transformer) {
    each.clear();
    for (int64_t l = 0; l < c.dec_depth; ++l)
      for (int64_t h = 0; h < c.heads; ++h) each.push_back({l, h});
  }
  ASSERT_EQ(all.distributions, int64_t(each.size()));
  for (size_t d = 0; d < each.size(); ++d) {
    const auto one = forced_attention(*model_, s.src, s.lengths, targets, each[d]);
    for (size_t b = 0; b < targets.size(); ++b) {
      const size_t block = (targets[b].size() + 1) * size_t(s.lengths[b]);
      ASSERT_EQ(one[b].size(), block);
      ASSERT_EQ(all.rows[b].size(), block * each.size());
      for (size_t i = 0; i < block; ++i)
        ASSERT_EQ(all.rows[b][d * block + i], one[b][i]) << "distribution " << d << " row " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, BeamLaws, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& p) { return p.param.name; });

TEST(ForceDecode, RejectsMismatchedTargetsAndBadIds) {
  const auto model = models::make_model(variants()[1].config, 3);
  model->set_training(false);
  const Source s = pad(random_sentences(2, 6));
  const std::vector<std::vector<int32_t>> one = {{4, 5}};
  EXPECT_THROW(force_decode(*model, s.src, s.lengths, one), ShapeError);
  const std::vector<std::vector<int32_t>> bad = {{4, 5}, {6, int32_t(kVocab)}};
  try {
    force_decode(*model, s.src, s.lengths, bad);
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 position 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(forced_attention(*model, s.src, s.lengths, bad, {}), IndexError);
  // Empty targets score only EOS.
  const std::vector<std::vector<int32_t>> empty = {{}, {}};
  const auto lp = force_decode(*model, s.src, s.lengths, empty);
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0].size(), 1u);
  EXPECT_LT(lp[0][0], 0.0f);
}

}  // namespace
}  // namespace qkv::decode
