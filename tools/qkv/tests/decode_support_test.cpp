// The pieces of translate / score / attend below the command line: reading stdin lines
// under the corpus rules, and word alignments from subword attention.
#include "decode_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "alignment.h"
#include "qkv/base/error.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

std::vector<data::Line> read_lines(const std::string& text, int64_t max_bytes = 1 << 20) {
  std::istringstream in(text);
  LineReader reader(in, max_bytes);
  std::vector<data::Line> out;
  data::Line line;
  while (reader.next(line)) out.push_back(line);
  return out;
}

TEST(LineReader, SplitsLinesLikeTheCorpusReader) {
  const auto lines = read_lines(
      "\xEF\xBB\xBF"
      "a\r\nb\n\n  \nlast");
  ASSERT_EQ(lines.size(), 5u);
  const char* texts[] = {"a", "b", "", "  ", "last"};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].text, texts[i]);
    EXPECT_EQ(lines[i].number, int64_t(i + 1));
    EXPECT_EQ(lines[i].status, data::LineStatus::Ok);
  }
  EXPECT_EQ(line_problem(lines[2], 10), "empty line");
  EXPECT_EQ(line_problem(lines[3], 10), "empty line");
  EXPECT_EQ(line_problem(lines[0], 10), std::nullopt);
  EXPECT_TRUE(read_lines("").empty());
  EXPECT_EQ(read_lines("\n").size(), 1u);
  EXPECT_EQ(read_lines("x\n").size(), 1u);
}

TEST(LineReader, FlagsInvalidAndOverlongLinesWithoutLosingTheirPlace) {
  const auto lines =
      read_lines("ok\nbad \xff byte\nabcdefghijklm\nabcdefghijkl\r\nctl\x01\nend\n", 12);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[1].status, data::LineStatus::Invalid);
  EXPECT_NE(lines[1].problem.find("invalid UTF-8 at byte 5"), std::string::npos)
      << lines[1].problem;
  EXPECT_TRUE(lines[1].text.empty());
  EXPECT_EQ(lines[2].status, data::LineStatus::TooLong);
  EXPECT_EQ(line_problem(lines[2], 12), "longer than 12 bytes");
  EXPECT_EQ(lines[3].status, data::LineStatus::Ok);  // 12 bytes once the '\r' is gone
  EXPECT_EQ(lines[3].text, "abcdefghijkl");
  EXPECT_EQ(lines[4].status, data::LineStatus::Invalid);
  EXPECT_NE(lines[4].problem.find("control character"), std::string::npos) << lines[4].problem;
  EXPECT_EQ(lines[5].text, "end");
  EXPECT_EQ(lines[5].number, 6);
}

TEST(LineReader, LinesLongerThanItsBuffer) {
  const std::string big(200000, 'x');
  const auto lines = read_lines(big + "\n" + big + big + "\nz", 300000);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, big);
  EXPECT_EQ(lines[1].status, data::LineStatus::TooLong);
  EXPECT_EQ(lines[2].text, "z");
}

TEST(LineReader, GzipDataIsAnErrorNotLinesOfGarbage) {
  const std::string gz("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+\xc9\n", 13);
  EXPECT_THROW(
      {
        try {
          read_lines(gz);
        } catch (const IoError& e) {
          EXPECT_NE(std::string(e.what()).find("gzip-compressed"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("zcat"), std::string::npos) << e.what();
          throw;
        }
      },
      IoError);
  // The magic bytes only count at the start of the input.
  EXPECT_EQ(read_lines("a\n\x1f\x8b\n")[1].status, data::LineStatus::Invalid);
}

// stdin redirected from a directory: every read fails with EISDIR, which std::cin alone
// would take for an empty input.
TEST(LineReader, UnreadableStdinIsAnErrorNotAnEmptyInput) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("qkv_stdin_dir." + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_NE(std::freopen(dir.c_str(), "r", stdin), nullptr);
  std::cin.clear();
  data::Line line;
  LineReader reader(std::cin);
  try {
    reader.next(line);
    ADD_FAILURE() << "no error reading a directory as stdin";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("reading stdin failed: Is a directory"), std::string::npos)
        << e.what();
  }
  ASSERT_NE(std::freopen("/dev/null", "r", stdin), nullptr);
  std::cin.clear();
  EXPECT_FALSE(LineReader(std::cin).next(line));  // an empty stdin is fine
  fs::remove_all(dir);
}

TEST(Fixed, FormatsWithoutLocale) {
  EXPECT_EQ(fixed(-1.2345678), "-1.234568");
  EXPECT_EQ(fixed(0.5, 2), "0.50");
  EXPECT_EQ(fixed(-std::numeric_limits<double>::infinity()), "-inf");
}

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

}  // namespace
}  // namespace qkv::tool
