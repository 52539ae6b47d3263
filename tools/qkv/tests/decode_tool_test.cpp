// translate end to end: the built qkv program runs on tiny models (random weights, saved
// through the checkpoint API beside a vocabulary trained here) in a temporary directory;
// the tests check exit codes, output formats and the line-count invariant with empty,
// malformed and overlong input lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "decode_tool_util.h"

namespace qkv {
namespace {

// Input lines 1..8: ordinary, empty, blank, invalid UTF-8, a control character, CRLF, too
// many tokens for --max-length 40, and a last line without '\n'.
const char* const kInput =
    "the red dog runs\n"
    "\n"
    "   \n"
    "a big \xff\xfe cat\n"
    "small \x01 ball\n"
    "the red dog runs\r\n"
    "red blue dog cat man girl runs sits big small park ball red blue dog cat\n"
    "a small cat sits in the park";
constexpr size_t kInputLines = 8;
constexpr size_t kSkipped[] = {2, 3, 4, 5, 7};  // 1-based lines that give empty output

bool skipped(size_t line) {
  return std::find(std::begin(kSkipped), std::end(kSkipped), line) != std::end(kSkipped);
}

TEST_F(DecodeToolTest, TranslateWritesExactlyOneLinePerInputLine) {
  write("input.txt", kInput);
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  make_model_dir("rnn", models::ModelType::Rnn, models::AttentionKind::Additive);
  for (const char* model : {"tf", "rnn"}) {
    // Mini-batches of 2 and one of them read ahead: several chunks, sorted within each.
    const Result r = qkv({"translate", "--model", model, "--max-length", "40", "--mini-batch", "2",
                          "--maxi-batch", "1", "--beam-size", "3"},
                         "input.txt");
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), ptrdiff_t(kInputLines)) << r.out;
    const std::vector<std::string> out = lines_of(r.out);
    for (size_t i = 1; i <= kInputLines; ++i) {
      if (skipped(i)) {
        EXPECT_EQ(out[i - 1], "") << model << " line " << i;
        EXPECT_TRUE(contains(r.err, "qkv translate: warning: line " + std::to_string(i) + ": "))
            << r.err;
      } else {
        EXPECT_FALSE(contains(r.err, "line " + std::to_string(i) + ": ")) << r.err;
      }
    }
    EXPECT_TRUE(contains(r.err, "line 2: empty line")) << r.err;
    EXPECT_TRUE(contains(r.err, "line 4: invalid UTF-8 at byte 7")) << r.err;
    EXPECT_TRUE(contains(r.err, "line 5: control character")) << r.err;
    EXPECT_TRUE(
        contains(r.err, "line 7: 51 subword tokens, more than the 40 this model translates"))
        << r.err;
    // The CRLF line is the first line; the same sentence in another batch, the same output.
    EXPECT_EQ(out[5], out[0]) << model;
    write("one.txt", "the red dog runs\n");
    const Result alone = qkv({"translate", "--model", model, "--beam-size", "3"}, "one.txt");
    ASSERT_EQ(alone.code, 0) << alone.err;
    EXPECT_EQ(alone.out, out[0] + "\n") << model;
  }
  // An empty input gives an empty output.
  const Result none = qkv({"translate", "--model", "tf"});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "");
}

// Long jobs report progress on stderr: with --disp-seconds given (or on a terminal), lines
// done, lines/s and, for a file on stdin, the share done and time left; a pipe or log
// gets none unless asked, so nothing changes on stdout either way.
TEST_F(DecodeToolTest, ProgressLinesWhenAskedAndNoneInALog) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  std::string text;
  for (int i = 0; i < 12; ++i) text += "the red dog runs\n";
  write("many.txt", text);
  write("pairs.txt", "the red dog runs ||| a dog\nthe cat ||| a cat\n");
  const Result quiet = qkv({"translate", "-m", "tf", "--mini-batch", "1"}, "many.txt");
  const Result shown =
      qkv({"translate", "-m", "tf", "--mini-batch", "1", "--disp-seconds", "0.000001"}, "many.txt");
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_EQ(shown.out, quiet.out);
  EXPECT_FALSE(contains(quiet.err, "lines/s")) << quiet.err;
  EXPECT_TRUE(contains(shown.err, "qkv translate: 12 lines, ")) << shown.err;
  EXPECT_TRUE(contains(shown.err, "% of the input, about ")) << shown.err;
  const Result score = qkv({"score", "-m", "tf", "--disp-seconds", "0.000001"}, "pairs.txt");
  ASSERT_EQ(score.code, 0) << score.err;
  EXPECT_TRUE(contains(score.err, "qkv score: 2 pairs, ")) << score.err;
  const Result attend = qkv({"attend", "-m", "tf", "--disp-seconds", "0.000001"}, "many.txt");
  ASSERT_EQ(attend.code, 0) << attend.err;
  EXPECT_TRUE(contains(attend.err, "qkv attend: 11 lines, ")) << attend.err;
  const Result bad = qkv({"translate", "-m", "tf", "--disp-seconds", "-1"}, "many.txt");
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.err, "--disp-seconds")) << bad.err;
}

TEST_F(DecodeToolTest, TranslateOverlongLinesByBytes) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  write("long.txt", "red dog\n" + std::string((1 << 20) + 10, 'a') + "\nblue cat\n");
  const Result r = qkv({"translate", "--model", "tf", "--beam-size", "2"}, "long.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> out = lines_of(r.out);
  ASSERT_EQ(out.size(), 3u) << r.out.substr(0, 200);
  EXPECT_EQ(out[1], "");
  EXPECT_FALSE(out[0].empty());
  EXPECT_TRUE(contains(r.err, "line 2: longer than 1048576 bytes")) << r.err;
}

TEST_F(DecodeToolTest, NBestIsMosesFormatSortedByScore) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  write("input.txt", kInput);
  const Result r =
      qkv({"translate", "-m", "tf", "--n-best", "3", "--beam-size", "4", "--max-length", "40"},
          "input.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::regex line(R"(^(\d+) \|\|\| (.*) \|\|\| (-?\d+\.\d{6}|-inf)$)");
  std::vector<std::vector<double>> scores(kInputLines);
  int64_t last_id = -1;
  for (const std::string& l : lines_of(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    const int64_t id = std::stoll(m[1]);
    ASSERT_GE(id, last_id) << "ids in input order";
    last_id = id;
    ASSERT_LT(size_t(id), kInputLines);
    scores[size_t(id)].push_back(m[3] == "-inf" ? -1e300 : std::stod(m[3]));
    if (m[3] == "-inf") {
      EXPECT_EQ(m[2], "") << l;
    }
  }
  for (size_t i = 0; i < kInputLines; ++i) {
    ASSERT_EQ(scores[i].size(), skipped(i + 1) ? 1u : 3u) << "id " << i;
    EXPECT_TRUE(std::is_sorted(scores[i].rbegin(), scores[i].rend())) << "id " << i;
  }
  const Result too_many = qkv({"translate", "-m", "tf", "--n-best", "5", "--beam-size", "4"});
  EXPECT_EQ(too_many.code, 2);
  EXPECT_TRUE(contains(too_many.err, "qkv translate: error: --n-best 5 exceeds --beam-size 4"))
      << too_many.err;
}

// For each output line "hyp ||| alignment": the hypothesis and the alignment.
std::vector<std::pair<std::string, std::string>> aligned_lines(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> r;
  for (const std::string& l : lines_of(out)) {
    const auto parts = split(l, " ||| ");
    r.emplace_back(parts[0], parts.size() > 1 ? parts[1] : "<none>");
  }
  return r;
}

TEST_F(DecodeToolTest, HardAlignmentsArePharaohPairsOverWords) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  write("src.txt", "the red dog runs\n\na small cat sits on the blue ball\nbig park\n");
  const std::vector<std::string> sources = {"the red dog runs", "",
                                            "a small cat sits on the blue ball", "big park"};
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--alignment-layer", "0", "--alignment-head", "1"}}) {
    std::vector<std::string> args = {"translate", "-m", "tf", "--alignment", "hard"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = qkv(args, "src.txt");
    ASSERT_EQ(r.code, 0) << r.err;
    const auto lines = aligned_lines(r.out);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[1].first, "");
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i == 1) continue;
      const auto& [hyp, alignment] = lines[i];
      ASSERT_NE(alignment, "<none>") << hyp;
      // One link per target word, in target order, to a source word that exists.
      size_t t = 0;
      for (const std::string& pair : split(alignment, " ")) {
        if (pair.empty()) continue;
        std::smatch m;
        ASSERT_TRUE(std::regex_match(pair, m, std::regex(R"((\d+)-(\d+))"))) << alignment;
        EXPECT_LT(std::stoul(m[1]), words_in(sources[i])) << alignment;
        EXPECT_EQ(std::stoul(m[2]), t++) << alignment;
      }
      EXPECT_EQ(t, words_in(hyp)) << hyp << " ||| " << alignment;
    }
  }
}

TEST_F(DecodeToolTest, SoftAlignmentsAreRowsOfSourceWordWeights) {
  make_model_dir("rnn", models::ModelType::Rnn, models::AttentionKind::General);
  write("src.txt", "the red dog runs\na small cat\n");
  const Result r = qkv({"translate", "-m", "rnn", "--alignment", "soft"}, "src.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = aligned_lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  const size_t source_words[] = {4, 3};
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& [hyp, alignment] = lines[i];
    std::vector<std::string> rows = split(alignment, " ");
    if (alignment.empty()) rows.clear();
    EXPECT_EQ(rows.size(), words_in(hyp)) << alignment;
    for (const std::string& row : rows) {
      const auto weights = split(row, ",");
      ASSERT_EQ(weights.size(), source_words[i]) << row;
      double sum = 0;
      for (const std::string& w : weights) {
        ASSERT_TRUE(std::regex_match(w, std::regex(R"(\d\.\d{4})"))) << row;
        sum += std::stod(w);
      }
      EXPECT_LE(sum, 1.0 + 1e-3) << row;  // the source EOS's share is left out
    }
  }
  make_model_dir("bottleneck", models::ModelType::Rnn, models::AttentionKind::None);
  const Result none = qkv({"translate", "-m", "bottleneck", "--alignment", "hard"}, "src.txt");
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(contains(none.err, "qkv translate: error: --alignment hard: ")) << none.err;
  EXPECT_EQ(none.out, "");
}

}  // namespace
}  // namespace qkv
