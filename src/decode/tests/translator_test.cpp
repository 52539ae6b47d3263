// decode::Translator over the compatibility models of tests/compat (trained and decoded
// by an earlier release): the driver reproduces that release's translations, keeps input
// order for any batching, reports skipped sentences with a reason, and its forced scores
// agree with the search's. Linked against qkv_decode alone: decoding needs no trainer.
#include "qkv/decode/translator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "qkv/base/error.h"

namespace qkv::decode {
namespace {

namespace fs = std::filesystem;

const fs::path kCompat = QKV_COMPAT_DIR;

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class TranslatorTest : public ::testing::TestWithParam<const char*> {
 protected:
  Translator load() const { return Translator::load(kCompat / "models" / GetParam()); }
  std::vector<std::string> input_ = read_lines(kCompat / "input.en");
};

TEST_P(TranslatorTest, GreedyEqualsTheEarlierRelease) {
  const Translator tr = load();
  TranslateOptions o;
  o.search.beam_size = 1;
  const std::vector<std::string> expected =
      read_lines(kCompat / "expected" / (std::string(GetParam()) + ".greedy"));
  const std::vector<SentenceResult> got = tr.translate(input_, o);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].ok() ? got[i].hypotheses[0].text : "", expected[i]) << "line " << i + 1;
}

TEST_P(TranslatorTest, BatchingAndTheGreedyPathChangeNoOutput) {
  const Translator tr = load();
  TranslateOptions one;
  one.search.beam_size = 1;
  one.mini_batch = 1;
  TranslateOptions batched = one;
  batched.mini_batch = 3;
  batched.batch_tokens = 40;  // some batches of 3, some cut by the budget
  batched.scores = false;     // greedy_decode instead of beam search with beam 1
  const auto a = tr.translate(input_, one), b = tr.translate(input_, batched);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].ok(), b[i].ok());
    if (a[i].ok()) {
      EXPECT_EQ(a[i].hypotheses[0].tokens, b[i].hypotheses[0].tokens);
    }
  }
}

TEST_P(TranslatorTest, TokenRowsTranslateAsTheirText) {
  const Translator tr = load();
  TranslateOptions o;
  o.search.beam_size = 2;
  std::vector<std::vector<int32_t>> rows;
  for (const std::string& line : input_) rows.push_back(tr.vocab().encode(line));
  const auto from_text = tr.translate(input_, o);
  const auto from_rows = translate_tokens(tr.model(), tr.vocab(), rows, o);
  ASSERT_EQ(from_text.size(), from_rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(from_rows[i].ok(), !rows[i].empty()) << "line " << i + 1;
    if (!rows[i].empty()) {
      EXPECT_EQ(from_rows[i].hypotheses[0].text, from_text[i].hypotheses[0].text);
      EXPECT_EQ(from_rows[i].hypotheses[0].score, from_text[i].hypotheses[0].score);
    } else {
      EXPECT_EQ(from_rows[i].skipped, SkipReason::NoTokens);  // text: Blank
      EXPECT_EQ(from_text[i].skipped, SkipReason::Blank);
    }
  }
}

TEST_P(TranslatorTest, SkipsWithAReasonAndKeepsItsPlace) {
  const Translator tr = load();
  TranslateOptions o;
  o.max_length = 3;
  const std::vector<std::string> in = {"A dog.", "   ", "A man in a blue shirt is running."};
  const auto r = tr.translate(in, o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].ok());
  EXPECT_EQ(r[1].skipped, SkipReason::Blank);
  EXPECT_EQ(r[2].skipped, SkipReason::TooLong);
  EXPECT_EQ(r[2].token_limit, 3);
  EXPECT_GT(r[2].token_count, 3);
  EXPECT_TRUE(r[2].hypotheses.empty());
  EXPECT_EQ(describe(SkipReason::TooLong, 9, 3), "9 subword tokens, more than the 3 allowed");
}

TEST_P(TranslatorTest, ForcedScoresEqualTheSearchsLogProbabilities) {
  const Translator tr = load();
  TranslateOptions o;
  o.search.beam_size = 3;
  o.search.n_best = 2;
  o.search.keep_attention = true;
  const std::vector<std::string> in(input_.begin(), input_.begin() + 3);
  const auto r = tr.translate(in, o);
  std::vector<std::string> sources, targets;
  std::vector<const TranslatedHypothesis*> hyps;
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(r[i].ok());
    ASSERT_EQ(r[i].hypotheses.size(), 2u);
    const TranslatedHypothesis& h = r[i].hypotheses[0];
    EXPECT_EQ(h.attention.size(), h.token_log_probs.size() * r[i].source.size());
    // Compared only where the text encodes back to the same tokens.
    if (tr.vocab().encode(h.text) != h.tokens) continue;
    sources.push_back(in[i]);
    targets.push_back(h.text);
    hyps.push_back(&h);
  }
  ASSERT_FALSE(hyps.empty());
  const auto s = tr.score(sources, targets, {});
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_TRUE(s[i].ok());
    // The forced pass scores every token and then EOS; the search's log_prob covers its S
    // steps (EOS only when it finished).
    const std::vector<float>& want = hyps[i]->token_log_probs;
    ASSERT_EQ(s[i].token_log_probs.size(), hyps[i]->tokens.size() + 1);
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_NEAR(s[i].token_log_probs[k], want[k], 1e-4f) << "pair " << i << " token " << k;
  }
  // The search's own attention equals the teacher-forced one of the same selection.
  const TranslatedHypothesis& h = r[0].hypotheses[0];
  std::vector<float> forced = tr.attention(r[0], h, o.search.attention);
  forced.resize(h.attention.size());
  for (size_t k = 0; k < forced.size(); ++k) EXPECT_NEAR(forced[k], h.attention[k], 1e-5f);
}

TEST_P(TranslatorTest, AttentionMapsHoldEveryLayerAndHeadOfTheHypothesis) {
  const Translator tr = load();
  const models::ModelConfig& c = tr.model().config();
  const bool transformer = c.type == models::ModelType::Transformer;
  for (const double factor : {2.0, 0.0}) {  // 0: cut at 5 tokens, so (usually) no EOS row
    TranslateOptions o;
    o.search.beam_size = 2;
    o.search.max_length_factor = factor;
    const std::vector<std::string> in = {input_[0], "A man in a blue shirt is running fast."};
    for (const SentenceResult& r : tr.translate(in, o)) {
      ASSERT_TRUE(r.ok());
      const TranslatedHypothesis& h = r.hypotheses[0];
      const AttentionMaps m = tr.attention_maps(r, h);
      EXPECT_EQ(m.layers, transformer ? c.dec_depth : 1);
      EXPECT_EQ(m.heads, transformer ? c.heads : 1);
      ASSERT_EQ(m.source_tokens.size(), r.source.size());
      EXPECT_EQ(m.source_tokens.back(), "</s>");
      ASSERT_EQ(m.target_tokens.size(), h.token_log_probs.size());
      EXPECT_EQ(m.target_tokens.back() == "</s>", h.finished);
      const size_t block = m.target_tokens.size() * m.source_tokens.size();
      ASSERT_EQ(m.weights.size(), size_t(m.layers * m.heads) * block);
      for (int64_t l = 0; l < m.layers; ++l)
        for (int64_t hd = 0; hd < m.heads; ++hd) {
          std::vector<float> one = tr.attention(r, h, {transformer ? l : 0, transformer ? hd : -1});
          one.resize(block);
          const auto first = m.weights.begin() + std::ptrdiff_t(size_t(l * m.heads + hd) * block);
          EXPECT_TRUE(std::equal(one.begin(), one.end(), first))
              << "layer " << l << " head " << hd << " factor " << factor;
        }
    }
  }
  EXPECT_THROW(
      (void)tr.attention_maps(SentenceResult{.skipped = SkipReason::Blank}, TranslatedHypothesis{}),
      ValueError);
}

// The Python module and the server translate with one Translator per thread.
TEST_P(TranslatorTest, TwoTranslatorsInTwoThreadsTranslateAsEachAlone) {
  const Translator a = load(), b = load();
  TranslateOptions o;
  o.search.beam_size = 3;
  o.search.keep_attention = true;
  const std::vector<std::string> in(input_.begin(), input_.begin() + 6);
  const auto alone = a.translate(in, o);
  std::vector<SentenceResult> ra, rb;
  {
    std::thread ta([&] { ra = a.translate(in, o); });
    std::thread tb([&] { rb = b.translate(in, o); });
    ta.join();
    tb.join();
  }
  ASSERT_EQ(ra.size(), alone.size());
  ASSERT_EQ(rb.size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i)
    for (const auto* r : {&ra[i], &rb[i]}) {
      ASSERT_EQ(r->hypotheses.size(), alone[i].hypotheses.size());
      if (r->hypotheses.empty()) continue;  // a skipped line
      EXPECT_EQ(r->hypotheses[0].tokens, alone[i].hypotheses[0].tokens) << "sentence " << i;
      EXPECT_EQ(r->hypotheses[0].score, alone[i].hypotheses[0].score) << "sentence " << i;
      EXPECT_EQ(r->hypotheses[0].attention, alone[i].hypotheses[0].attention) << "sentence " << i;
    }
}

TEST_P(TranslatorTest, OptionsAreCheckedByFieldName) {
  const Translator tr = load();
  TranslateOptions o;
  o.mini_batch = 0;
  const std::vector<std::string> in = {"A dog."};
  try {
    (void)tr.translate(in, o);
    FAIL() << "mini_batch 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mini_batch 0"), std::string::npos) << e.what();
  }
}

// "rnn_additive": gtest names allow no '-'.
std::string model_name(const ::testing::TestParamInfo<const char*>& param) {
  std::string name = param.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(CompatModels, TranslatorTest,
                         ::testing::Values("rnn-additive", "transformer"), model_name);

TEST(TranslatorLoad, NamesThePathThatHoldsNoModel) {
  try {
    (void)Translator::load(kCompat / "no-such-model");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no such model directory or file"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << "names a flag: " << e.what();
  }
}

}  // namespace
}  // namespace qkv::decode
