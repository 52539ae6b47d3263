// Words from subword attention (qkv/decode/alignment.h): merging pieces into words by the
// one rule that translate --alignment, attend --merge-subwords and the report share.
#include "qkv/decode/alignment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "qkv/data/vocab.h"

namespace qkv::decode {
namespace {

namespace fs = std::filesystem;

// A vocabulary trained on a few words; the tests pick pieces by their shape.
class AlignmentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path dir =
        fs::path(::testing::TempDir()) / ("qkv_alignment_test." + std::to_string(::getpid()));
    fs::create_directories(dir);
    {
      std::ofstream out(dir / "text");
      const char* words[] = {"the",  "red",   "dog",   "runs",  "in",    "park",  "ein",
                             "hund", "lauft", "small", "cat",   "sits",  "on",    "blue",
                             "ball", "man",   "girl",  "horse", "brown", "green", "tree"};
      for (int i = 0; i < 400; ++i)  // every word next to every other
        out << words[i % 21] << " " << words[(i / 21 + i) % 21] << " " << words[(i * 7) % 21]
            << "\n";
    }
    data::train_vocab({dir / "text"}, 40, dir / "v.spm");
    vocab_ = new data::Vocab(data::Vocab::load(dir / "v.spm"));
    fs::remove_all(dir);
  }
  static void TearDownTestSuite() { delete vocab_; }

  // An ordinary piece that starts a word (nth such) or continues one.
  static int32_t piece(bool starts, int nth = 0) {
    for (int32_t id = 4; id < vocab_->size(); ++id)
      if (id != vocab_->unk_id() && vocab_->starts_word(id) == starts &&
          vocab_->piece(id) != "\xE2\x96\x81" && nth-- == 0)
        return id;
    ADD_FAILURE() << "no such piece";
    return 4;
  }

  static data::Vocab* vocab_;
};
data::Vocab* AlignmentTest::vocab_ = nullptr;

TEST_F(AlignmentTest, MergesPiecesIntoWordsAndDropsSpecials) {
  const int32_t eos = vocab_->eos_id();
  // Source words {A B, C} and EOS; target words {D, E F}.
  const std::vector<int32_t> src = {piece(true, 0), piece(false, 0), piece(true, 1), eos};
  const std::vector<int32_t> tgt = {piece(true, 2), piece(true, 3), piece(false, 1)};
  // Rows [4 steps (3 tokens + EOS), 4 source tokens]; the EOS column's mass is left out.
  const std::vector<float> rows = {0.1f, 0.6f, 0.2f, 0.1f,   // D: word 0 gets 0.7
                                   0.4f, 0.0f, 0.5f, 0.1f,   // E
                                   0.0f, 0.2f, 0.8f, 0.0f,   // F: word 1 avg 0.65 vs 0.3
                                   0.0f, 0.0f, 0.0f, 1.0f};  // the EOS step: ignored
  const auto words = word_attention(*vocab_, src, tgt, rows);
  ASSERT_TRUE(words.has_value());
  EXPECT_EQ(words->source.size(), 2u);
  EXPECT_EQ(words->target.size(), 2u);
  EXPECT_EQ(hard_alignment(words), "0-0 1-1");
  EXPECT_EQ(soft_alignment(words), "0.7000,0.2000 0.3000,0.6500");
}

TEST_F(AlignmentTest, UnknownTokensStandAloneAndEmptyTranslationsAlignNothing) {
  const int32_t eos = vocab_->eos_id(), unk = vocab_->unk_id();
  const std::vector<int32_t> src = {piece(true, 0), piece(true, 1), eos};
  // decode() writes <unk> as " ⁇ ", a word of its own: 3 target words.
  const std::vector<int32_t> tgt = {piece(true, 2), unk, piece(false, 0)};
  const std::vector<float> rows = {1, 0, 0, 0, 1, 0, 0, 1, 0};
  EXPECT_EQ(hard_alignment(word_attention(*vocab_, src, tgt, rows)), "0-0 1-1 1-2");
  EXPECT_EQ(hard_alignment(word_attention(*vocab_, src, {}, rows)), "");
  EXPECT_EQ(soft_alignment(std::nullopt), "");
}

TEST_F(AlignmentTest, TokenMapsLabelPiecesAndTheEosStep) {
  const int32_t eos = vocab_->eos_id();
  const std::vector<int32_t> src = {piece(true, 0), piece(false, 0), eos};
  const std::vector<int32_t> tgt = {piece(true, 1)};
  const std::vector<float> two_steps = {0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f};
  const viz::AttentionMap m = token_attention(*vocab_, src, tgt, two_steps, false);
  EXPECT_EQ(m.source, vocab_->pieces(src));
  ASSERT_EQ(m.target.size(), 2u);
  EXPECT_EQ(m.target[1], "</s>");
  const viz::AttentionMap merged = token_attention(*vocab_, src, tgt, two_steps, true);
  EXPECT_EQ(merged.source.size(), 2u);  // the word A B, and </s>
  EXPECT_FLOAT_EQ(merged.weights[0], 1.0f);
  // A cut hypothesis has no EOS step.
  EXPECT_EQ(token_attention(*vocab_, src, tgt, {two_steps.data(), 3}, false).target.size(), 1u);
}

// The heatmap's merged words and the alignment's words are the same words: one rule.
TEST_F(AlignmentTest, HeatmapsAndAlignmentsMergeAlike) {
  const int32_t eos = vocab_->eos_id(), unk = vocab_->unk_id();
  // Source: word A B, <unk>, a continuation piece after <unk>, word C, EOS.
  const std::vector<int32_t> src = {piece(true, 0),  piece(false, 0), unk,
                                    piece(false, 1), piece(true, 1),  eos};
  const std::vector<int32_t> tgt = {piece(true, 2), piece(false, 2), unk};
  std::vector<float> rows(4 * src.size(), 1.0f / float(src.size()));
  const auto words = word_attention(*vocab_, src, tgt, rows);
  const viz::AttentionMap merged = token_attention(*vocab_, src, tgt, rows, true);
  ASSERT_TRUE(words.has_value());
  // The heatmap keeps </s> as its own column and row; otherwise the labels agree.
  std::vector<std::string> source = merged.source, target = merged.target;
  ASSERT_EQ(source.back(), "</s>");
  ASSERT_EQ(target.back(), "</s>");
  source.pop_back();
  target.pop_back();
  EXPECT_EQ(words->source, source);
  EXPECT_EQ(words->target, target);
  EXPECT_EQ(words->source.size(), 4u);  // A B | <unk> | the piece after it | C
  // The report's map: the same words (no blank piece here to leave out).
  EXPECT_EQ(word_map(*vocab_, src, tgt, rows)->source, words->source);
  EXPECT_EQ(word_map(*vocab_, src, tgt, rows)->target, words->target);
  const std::vector<bool> starts = word_starts(*vocab_, src);
  EXPECT_EQ(starts, (std::vector<bool>{true, false, true, true, true, true}));
}

}  // namespace
}  // namespace qkv::decode
