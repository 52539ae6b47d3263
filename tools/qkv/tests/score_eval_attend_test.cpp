// score, eval and attend end to end through the built qkv program (see decode_tool_util.h),
// and the one-line errors and exit codes of all four decoding commands.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "decode_tool_util.h"
#include "xml_check.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

const std::regex kScoreLine(R"(^(-?\d+\.\d{6}) (-?\d+\.\d{6})$)");

TEST_F(DecodeToolTest, ScoreWritesOneLinePerPair) {
  make_model_dir("rnn", models::ModelType::Rnn, models::AttentionKind::Additive);
  write("pairs.txt",
        "the red dog runs ||| der rote hund lauft\n"
        "no separator here\n"
        "bad \xc3\x28 byte ||| x\n"
        "   ||| nur ziel\n"
        "a small cat ||| \n");
  const Result r = qkv({"score", "-m", "rnn"}, "pairs.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> out = lines_of(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out;
  for (const size_t i : {1, 2, 3}) EXPECT_EQ(out[i], "") << i;
  EXPECT_TRUE(contains(r.err, "qkv score: warning: line 2: no ' ||| '")) << r.err;
  EXPECT_TRUE(contains(r.err, "line 3: invalid UTF-8")) << r.err;
  EXPECT_TRUE(contains(r.err, "line 4: empty source sentence")) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(out[0], m, kScoreLine)) << out[0];
  const double sum = std::stod(m[1]), per_token = std::stod(m[2]);
  EXPECT_LT(sum, 0);
  EXPECT_GT(per_token, sum);  // divided by the target tokens + EOS (> 1)
  // An empty translation: only EOS is scored, so the two numbers agree.
  ASSERT_TRUE(std::regex_match(out[4], m, kScoreLine)) << out[4];
  EXPECT_EQ(m[1], m[2]);

  // The same pairs from two files give the same numbers.
  write("s.txt", "the red dog runs\na small cat\n");
  write("t.txt", "der rote hund lauft\n\n");
  const Result files = qkv({"score", "-m", "rnn", "--src", "s.txt", "--tgt", "t.txt"});
  ASSERT_EQ(files.code, 0) << files.err;
  EXPECT_EQ(files.out, out[0] + "\n" + out[4] + "\n");
  write("short.txt", "der rote hund lauft\n");
  const Result uneven = qkv({"score", "-m", "rnn", "--src", "s.txt", "--tgt", "short.txt"});
  EXPECT_EQ(uneven.code, 1);
  EXPECT_TRUE(contains(uneven.err,
                       "qkv score: error: s.txt and short.txt differ in length: short.txt ends "
                       "after 1 lines, s.txt goes on"))
      << uneven.err;
}

// Plain text piped to score by mistake is refused with the format, nothing on stdout;
// lines before the first pair only wait for it (streaming keeps one line per line).
TEST_F(DecodeToolTest, ScoreRefusesInputInWhichNoLineHasTheSeparator) {
  make_model_dir("rnn", models::ModelType::Rnn, models::AttentionKind::Additive);
  write("plain.txt", "the red dog runs\n\na small cat\n");
  const Result r = qkv({"score", "-m", "rnn"}, "plain.txt");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "qkv score: error: stdin: no line has ' ||| ' (2 without it)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "`source ||| translation` pair per line")) << r.err;
  EXPECT_TRUE(contains(r.err, "--src SRC --tgt TGT")) << r.err;

  write("late.txt", "no separator\n\nthe red dog runs ||| der rote hund\n");
  const Result late = qkv({"score", "-m", "rnn"}, "late.txt");
  ASSERT_EQ(late.code, 0) << late.err;
  const std::vector<std::string> out = lines_of(late.out);
  ASSERT_EQ(out.size(), 3u) << late.out;
  EXPECT_EQ(out[0], "");
  EXPECT_EQ(out[1], "");
  EXPECT_TRUE(std::regex_match(out[2], kScoreLine)) << out[2];
  EXPECT_TRUE(contains(late.err, "warning: line 1: no ' ||| '")) << late.err;
  EXPECT_TRUE(contains(late.err, "warning: line 2: empty line")) << late.err;
}

// Which score is which, where a user looks: score's two numbers and n-best's normalised one.
TEST_F(DecodeToolTest, HelpSaysWhichScoreIsRawAndWhichNormalised) {
  const Result score = qkv({"score", "--help"});
  ASSERT_EQ(score.code, 0);
  EXPECT_TRUE(contains(score.out, "raw")) << score.out;
  EXPECT_TRUE(contains(score.out, "--normalize")) << score.out;
  const Result translate = qkv({"translate", "--help"});
  ASSERT_EQ(translate.code, 0);
  EXPECT_TRUE(contains(translate.out, "0-based")) << translate.out;
  EXPECT_TRUE(contains(translate.out, "1-based")) << translate.out;
  EXPECT_TRUE(contains(translate.out, "raw sum")) << translate.out;
}

// sacreBLEU's test/test_bleu.py, _hyps and _refs (also its README's API example).
const char* const kHyps =
    "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n";
const char* const kRef1 = "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n";
const char* const kRef2 =
    "The dog had bit the man.\nNo one was surprised.\nThe man had bitten the dog.\n";

TEST_F(DecodeToolTest, EvalPrintsSacreBleuScoresWithSignatures) {
  write("hyps.txt", kHyps);
  write("ref1.txt", kRef1);
  write("ref2.txt", kRef2);
  const Result r = qkv({"eval", "--ref", "ref1.txt", "--ref", "ref2.txt"}, "hyps.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> out = lines_of(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  // test_bleu.py, test_corpus_bleu_cases[0]: 48.530827; the text format of sacreBLEU's
  // README ("BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ...)"). chrF2 = 59.73: the
  // README's CHRF().corpus_score(sys, refs).
  EXPECT_TRUE(std::regex_match(
      out[0], std::regex(R"(BLEU\|nrefs:2\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|)"
                         R"(version:qkv-[0-9.]+ = 48\.53 82\.4/50\.0/45\.5/37\.5 )"
                         R"(\(BP = 0\.943 ratio = 0\.944 hyp_len = 17 ref_len = 18\))")))
      << out[0];
  EXPECT_TRUE(std::regex_match(
      out[1], std::regex(R"(chrF2\|nrefs:2\|case:mixed\|eff:yes\|nc:6\|nw:0\|space:no\|)"
                         R"(version:qkv-[0-9.]+ = 59\.73)")))
      << out[1];
  // The hypothesis file as the one positional argument gives the same scores.
  const Result positional = qkv({"eval", "--ref", "ref1.txt", "--ref", "ref2.txt", "hyps.txt"});
  ASSERT_EQ(positional.code, 0) << positional.err;
  EXPECT_EQ(positional.out, r.out);
  // `--ref ref1 ref2 < hyps` once meant two references; now ref2.txt would be the
  // hypotheses, so having hypotheses on stdin as well is refused, never silently rescored.
  const Result twice = qkv({"eval", "--ref", "ref1.txt", "ref2.txt"}, "hyps.txt");
  EXPECT_EQ(twice.code, 2);
  EXPECT_TRUE(contains(twice.err, "given twice: as the file ref2.txt and on stdin")) << twice.err;
  EXPECT_TRUE(contains(twice.err, "--ref A --ref B")) << twice.err;
  const Result two_files = qkv({"eval", "--ref", "ref1.txt", "hyps.txt", "ref2.txt"});
  EXPECT_EQ(two_files.code, 2);
  EXPECT_TRUE(contains(two_files.err, "expected one hypothesis file, got 2")) << two_files.err;
  // Nothing on stdin and no file: an error, not a score.
  const Result nothing = qkv({"eval", "--ref", "ref1.txt"});
  EXPECT_EQ(nothing.code, 1);
  EXPECT_TRUE(contains(nothing.err, "no translations on stdin")) << nothing.err;
  const Result missing = qkv({"eval", "--ref", "ref1.txt", "nope.txt"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(contains(missing.err, "nope.txt: no such file")) << missing.err;
  // test_bleu.py, test_corpus_bleu_cases[1]: three empty hypotheses score 0, not an error.
  write("empty.txt", "\n\n\n");
  const Result empty = qkv({"eval", "--ref", "ref1.txt", "--ref", "ref2.txt"}, "empty.txt");
  ASSERT_EQ(empty.code, 0) << empty.err;
  EXPECT_TRUE(contains(empty.out, "version:qkv-")) << empty.out;
  EXPECT_TRUE(std::regex_search(empty.out, std::regex(R"(^BLEU\|[^ ]+ = 0\.00 )"))) << empty.out;

  write("src.txt", "one two\n" + std::string(15, 'w') + " a b c d e f g h i j k l\nx\n");
  const Result buckets = qkv({"eval", "--ref", "ref1.txt", "--by-length", "src.txt"}, "hyps.txt");
  ASSERT_EQ(buckets.code, 0) << buckets.err;
  const std::vector<std::string> table = lines_of(buckets.out);
  ASSERT_EQ(table.size(), 10u) << buckets.out;  // BLEU, chrF, blank, header, 6 buckets
  EXPECT_TRUE(std::regex_match(table[3], std::regex(R"(length\s+sentences\s+BLEU\s+chrF2)")))
      << table[3];
  EXPECT_TRUE(std::regex_match(table[4], std::regex(R"(1-10\s+2\s+\d+\.\d\d\s+\d+\.\d\d)")))
      << table[4];
  EXPECT_TRUE(std::regex_match(table[5], std::regex(R"(11-20\s+1\s+\d+\.\d\d\s+\d+\.\d\d)")))
      << table[5];
  EXPECT_TRUE(std::regex_match(table[9], std::regex(R"(50\+\s+0\s+-\s+-)"))) << table[9];

  // --bootstrap: an interval line after BLEU that contains it, and a CI column for the
  // buckets of at least 10 sentences (12 short ones here: the three pairs four times).
  std::string hyps12, refs12, src12;
  for (int k = 0; k < 4; ++k) {
    hyps12 += kHyps;
    refs12 += kRef1;
    src12 += "one two\nthree four five\nsix\n";
  }
  src12.replace(0, 7, std::string(15, 'w') + " a b c d e f g h i j k l");  // one of 13 words
  write("hyps12.txt", hyps12);
  write("ref12.txt", refs12);
  write("src12.txt", src12);
  const Result ci =
      qkv({"eval", "--ref", "ref12.txt", "--by-length", "src12.txt", "--bootstrap", "200"},
          "hyps12.txt");
  ASSERT_EQ(ci.code, 0) << ci.err;
  const std::vector<std::string> with_ci = lines_of(ci.out);
  ASSERT_EQ(with_ci.size(), 11u) << ci.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(with_ci[1], m,
                               std::regex(R"(BLEU 95% CI = (\d+\.\d\d)-(\d+\.\d\d) )"
                                          R"(\(percentile bootstrap, 200 resampled test sets\))")))
      << with_ci[1];
  std::smatch bleu;
  ASSERT_TRUE(std::regex_search(with_ci[0], bleu, std::regex(R"( = (\d+\.\d\d) )")));
  EXPECT_LE(std::stod(m[1]), std::stod(bleu[1]));
  EXPECT_GE(std::stod(m[2]), std::stod(bleu[1]));
  EXPECT_LT(std::stod(m[1]), std::stod(m[2]));  // the three pairs differ in quality
  EXPECT_TRUE(
      std::regex_match(with_ci[4], std::regex(R"(length\s+sentences\s+BLEU\s+chrF2\s+95% CI)")))
      << with_ci[4];
  EXPECT_TRUE(std::regex_match(
      with_ci[5], std::regex(R"(1-10\s+11\s+\d+\.\d\d\s+\d+\.\d\d\s+\d+\.\d\d-\d+\.\d\d)")))
      << with_ci[5];
  // One sentence of 13 words: a score, but no interval from a single sentence.
  EXPECT_TRUE(std::regex_match(with_ci[6], std::regex(R"(11-20\s+1\s+\d+\.\d\d\s+\d+\.\d\d\s+-)")))
      << with_ci[6];
  EXPECT_TRUE(std::regex_match(with_ci[10], std::regex(R"(50\+\s+0\s+-\s+-\s+-)"))) << with_ci[10];
  EXPECT_EQ(qkv({"eval", "--ref", "ref1.txt", "--bootstrap", "-1"}, "hyps.txt").code, 2);
}

TEST_F(DecodeToolTest, EvalRejectsUnpairedInput) {
  write("hyps.txt", kHyps);
  write("ref1.txt", kRef1);
  write("short.txt", "The dog bit the man.\n");
  write("bad.txt", "fine\n\xff\nfine\n");
  const Result uneven = qkv({"eval", "--ref", "short.txt"}, "hyps.txt");
  EXPECT_EQ(uneven.code, 1);
  EXPECT_TRUE(contains(uneven.err, "qkv eval: error: --ref short.txt has 1 lines, but stdin has 3"))
      << uneven.err;
  const Result invalid = qkv({"eval", "--ref", "ref1.txt"}, "bad.txt");
  EXPECT_EQ(invalid.code, 1);
  EXPECT_TRUE(contains(invalid.err, "qkv eval: error: stdin:2: invalid UTF-8")) << invalid.err;
  const Result bad_ref = qkv({"eval", "--ref", "bad.txt"}, "hyps.txt");
  EXPECT_EQ(bad_ref.code, 1);
  EXPECT_TRUE(contains(bad_ref.err, "--ref bad.txt:2: invalid UTF-8")) << bad_ref.err;
  const Result missing = qkv({"eval", "--ref", "nope.txt"}, "hyps.txt");
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(contains(missing.err, "--ref nope.txt: no such file")) << missing.err;
  const Result empty = qkv({"eval", "--ref", "ref1.txt"});
  EXPECT_EQ(empty.code, 1);
  EXPECT_TRUE(contains(empty.err, "no translations on stdin")) << empty.err;
}

bool is_png(const std::string& bytes) {
  return bytes.size() > 24 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 &&
         bytes.compare(12, 4, "IHDR") == 0;
}

TEST_F(DecodeToolTest, AttendDrawsHeatmapsAndWritesSvgAndPngFiles) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  write("src.txt", "the red dog runs\n\na small cat\n");
  const Result r =
      qkv({"attend", "-m", "tf", "--svg", "svg", "--png", "png", "--merge-subwords"}, "src.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "line 1: layer 1, head avg")) << r.out;
  EXPECT_TRUE(contains(r.out, "line 3: layer 1, head avg")) << r.out;
  EXPECT_TRUE(contains(r.out, "\u2502")) << r.out;  // the heatmap's frame
  EXPECT_TRUE(contains(r.err, "qkv attend: warning: line 2: empty line; skipped")) << r.err;
  for (const char* stem : {"line-1", "line-3"}) {
    const std::string svg = slurp(dir_ / "svg" / (std::string(stem) + ".svg"));
    EXPECT_TRUE(svg.starts_with("<svg")) << stem;
    EXPECT_TRUE(contains(svg, "qkv-heatmap")) << stem;
    EXPECT_EQ(viz::testing::xml_errors(svg), "") << stem;
    EXPECT_TRUE(is_png(slurp(dir_ / "png" / (std::string(stem) + ".png")))) << stem;
  }
  EXPECT_FALSE(fs::exists(dir_ / "svg" / "line-2.svg"));

  // Words by default (--merge-subwords is that default), pieces when asked; not both.
  const Result words = qkv({"attend", "-m", "tf"}, "src.txt");
  const Result pieces = qkv({"attend", "-m", "tf", "--pieces"}, "src.txt");
  ASSERT_EQ(words.code, 0) << words.err;
  ASSERT_EQ(pieces.code, 0) << pieces.err;
  EXPECT_EQ(words.out, r.out);
  EXPECT_FALSE(contains(words.out, "\u2581")) << words.out;
  EXPECT_TRUE(contains(pieces.out, "\u2581")) << pieces.out;
  const Result both = qkv({"attend", "-m", "tf", "--pieces", "--merge-subwords"}, "src.txt");
  EXPECT_EQ(both.code, 2);
  EXPECT_TRUE(contains(both.err, "--pieces and --merge-subwords")) << both.err;

  // Every layer and head: one file each, named by layer and head.
  const Result all =
      qkv({"attend", "-m", "tf", "--svg", "all", "--layer", "all", "--head", "all"}, "src.txt");
  ASSERT_EQ(all.code, 0) << all.err;
  for (const char* name : {"line-1.layer-0.head-0.svg", "line-1.layer-0.head-1.svg",
                           "line-1.layer-1.head-0.svg", "line-3.layer-1.head-1.svg"})
    EXPECT_TRUE(fs::exists(dir_ / "all" / name)) << name;

  make_model_dir("rnn", models::ModelType::Rnn, models::AttentionKind::Additive);
  const Result rnn = qkv({"attend", "-m", "rnn", "--png", "rpng"}, "src.txt");
  ASSERT_EQ(rnn.code, 0) << rnn.err;
  EXPECT_TRUE(is_png(slurp(dir_ / "rpng" / "line-1.png")));
  make_model_dir("bottleneck", models::ModelType::Rnn, models::AttentionKind::None);
  const Result none = qkv({"attend", "-m", "bottleneck"}, "src.txt");
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(contains(none.err, "an rnn without attention has no attention to show")) << none.err;
}

TEST_F(DecodeToolTest, HelpListsTheFlags) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"translate",
       {"--model", "--beam-size", "--normalize", "--coverage-penalty", "--max-length-factor",
        "--n-best", "--mini-batch", "--threads", "--alignment", "--alignment-layer",
        "--alignment-head"}},
      {"score", {"--model", "--src", "--tgt", "--mini-batch"}},
      {"eval", {"--ref", "--by-length"}},
      {"attend", {"--model", "--svg", "--png", "--pieces", "--layer", "--head"}}};
  for (const auto& [command, flags] : commands) {
    const Result h = qkv({command, "--help"});
    EXPECT_EQ(h.code, 0) << command;
    for (const std::string& flag : flags) EXPECT_TRUE(contains(h.out, flag)) << command << flag;
  }
  const Result usage = qkv({"--help"});
  for (const char* command : {"translate", "score", "eval", "attend"})
    EXPECT_TRUE(contains(usage.out, command)) << command;
}

TEST_F(DecodeToolTest, ErrorsAreOneLineNamingTheFlagOrFile) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  make_model_dir("bottleneck", models::ModelType::Rnn, models::AttentionKind::None);
  fs::create_directories(dir_ / "empty");
  const struct {
    std::vector<std::string> args;
    int code;
    std::string expected;
  } cases[] = {
      {{"translate"}, 2, "qkv translate: error: missing required option --model"},
      {{"translate", "-m", "nowhere"}, 1, "--model nowhere: no such model directory or file"},
      {{"translate", "-m", "empty"}, 1, "--model empty: no model.safetensors"},
      {{"translate", "-m", "tf", "--beam-size", "0"}, 2, "--beam-size 0"},
      {{"translate", "-m", "tf", "--alignment", "fuzzy"}, 2, "--alignment fuzzy"},
      {{"translate", "-m", "tf", "--alignment-layer", "2", "--alignment", "hard"},
       2,
       "--alignment-layer 2: the model has 2 attention layer(s)"},
      {{"translate", "-m", "tf", "--alignment-head", "2", "--alignment", "hard"},
       2,
       "--alignment-head 2"},
      {{"translate", "-m", "bottleneck", "--coverage-penalty", "0.2"},
       2,
       "--coverage-penalty 0.2: the model is an rnn without attention"},
      {{"translate", "-m", "tf", "--beem-size", "3"}, 2, "did you mean --beam-size?"},
      {{"score", "-m", "tf", "--tgt", "x.txt"}, 2, "qkv score: error: --tgt needs --src"},
      {{"score", "-m", "tf", "--src", "a.txt", "--tgt", "b.txt"}, 1, "a.txt"},
      {{"eval"}, 2, "qkv eval: error: missing required option --ref"},
      {{"attend", "-m", "tf", "--layer", "5"}, 2, "--layer 5: the model has 2 decoder layers"},
      {{"attend", "-m", "tf", "--head", "first"}, 2, "--head first: must be avg, all, or"},
  };
  for (const auto& c : cases) {
    const Result r = qkv(c.args);
    EXPECT_EQ(r.code, c.code) << c.expected << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.expected)) << r.err;
    EXPECT_TRUE(contains(r.err, "qkv " + c.args[0] + ": error: ")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_EQ(r.out, "") << c.expected;
  }
}

// `--png out.png` once created a directory named out.png: a file-like name is refused
// (usage error, nothing created) with what the flag expects; summaries count in English.
TEST_F(DecodeToolTest, AttendRefusesAnImageFileNameForItsDirectoryAndCountsInEnglish) {
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  write("one.txt", "the red dog runs\n");
  for (const char* flag : {"--png", "--svg"}) {
    for (const char* name : {"out.png", "maps/OUT.SVG"}) {
      const Result r = qkv({"attend", "-m", "tf", flag, name}, "one.txt");
      EXPECT_EQ(r.code, 2) << flag << " " << name << ": " << r.err;
      EXPECT_TRUE(contains(r.err, std::string(flag) + " " + name + ": expects a directory"))
          << r.err;
      EXPECT_FALSE(fs::exists(dir_ / name)) << name;
    }
  }
  const Result one = qkv({"attend", "-m", "tf", "--png", "maps"}, "one.txt");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_TRUE(fs::exists(dir_ / "maps" / "line-1.png"));
  EXPECT_TRUE(contains(one.err, "showed the attention of 1 sentence;")) << one.err;
  const Result tr = qkv({"translate", "-m", "tf"}, "one.txt");
  EXPECT_TRUE(contains(tr.err, "translated 1 line in ")) << tr.err;
}

}  // namespace
}  // namespace qkv
