// qkv compare and qkv report end to end on a tiny corpus: exit codes, the table, the
// files, and the errors a user can make (each names the flag or file and exits 2 for a
// usage error, 1 for a runtime error).
#include <fstream>
#include <nlohmann/json.hpp>

#include "experiment_tool_util.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

// One comparison for the whole suite (it trains three models).
class CompareTool : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = make_corpus_dir("compare_tool");
    std::vector<std::string> args = tiny_compare_args("out");
    args.push_back("--report");
    result_ = run_qkv(dir_, args);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static fs::path dir_;
  static ToolResult result_;
};
fs::path CompareTool::dir_;
ToolResult CompareTool::result_;

TEST_F(CompareTool, PrintsOneTableWithARowPerVariant) {
  ASSERT_EQ(result_.code, 0) << result_.err;
  const std::string& out = result_.out;
  ASSERT_EQ(lines_starting(out, "variant").size(), 1u) << out;
  const std::string header = lines_starting(out, "variant")[0];
  for (const char* col : {"BLEU", "BLEU 95% CI", "chrF2", "BLEU 1-10 (n=", "attn entropy (uniform)",
                          "train tok/s", "decode sent/s", "params", "peak RSS", "wall"})
    EXPECT_TRUE(has(header, col)) << col << " missing from: " << header;
  for (const char* v : {"rnn:none ", "rnn:additive ", "transformer "})
    EXPECT_EQ(lines_starting(out, v).size(), 1u) << v << " row missing from:\n" << out;
}

TEST_F(CompareTool, ShowsProgressForEveryPhase) {
  const std::string& err = result_.err;
  EXPECT_TRUE(has(err, "[compare] vocabulary: training 40 SentencePiece pieces")) << err;
  EXPECT_TRUE(has(err, "[1/3 rnn:none] training under --after 30u")) << err;
  EXPECT_TRUE(has(err, "ep 1 up 10: loss")) << err;  // the trainer's own lines
  EXPECT_TRUE(has(err, "[3/3 transformer] translating 30 test sentences")) << err;
  EXPECT_TRUE(has(err, "[2/3 rnn:additive] BLEU|nrefs:1|")) << err;
}

TEST_F(CompareTool, WritesTheResultFilesAndKeepsEachModel) {
  const fs::path out = dir_ / "out";
  for (const char* f : {"compare.csv", "compare.json", "bleu_by_length.svg", "samples.json",
                        "report.html", "vocab.spm"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  for (const char* v : {"rnn-none", "rnn-additive", "transformer"}) {
    EXPECT_TRUE(fs::exists(out / "models" / v / "model.safetensors")) << v;
    EXPECT_TRUE(fs::exists(out / "models" / v / "vocab.spm")) << v;
    // One translation per test line.
    const std::string hyps = read_text(out / "hyps" / (std::string(v) + ".txt"));
    EXPECT_EQ(std::count(hyps.begin(), hyps.end(), '\n'), 30) << v;
  }
  const std::string csv = read_text(out / "compare.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
  const auto json = nlohmann::json::parse(read_text(out / "compare.json"));
  ASSERT_EQ(json["variants"].size(), 3u);
  EXPECT_EQ(json["variants"][1]["name"], "rnn:additive");
  EXPECT_EQ(json["variants"][1]["updates"], 30);
  EXPECT_EQ(json["variants"][1]["evaluated_file"], "model.best.safetensors");
  EXPECT_EQ(json["variants"][1]["model_dir"], "models/rnn-additive");
  EXPECT_GT(json["variants"][2]["parameters"].get<int64_t>(), 0);
  EXPECT_GT(json["variants"][0]["peak_rss_bytes"].get<int64_t>(), 0);
  const std::string svg = read_text(out / "bleu_by_length.svg");
  EXPECT_TRUE(has(svg, "class=\"qkv-chart\"") && has(svg, "rnn:additive"));
  // Heatmaps for the two variants with attention, none for rnn:none.
  const std::string samples = read_text(out / "samples.json");
  EXPECT_TRUE(has(samples, "rnn:additive, test sentence"));
  EXPECT_TRUE(has(samples, "transformer, test sentence"));
  EXPECT_FALSE(has(samples, "rnn:none, test sentence"));
}

TEST_F(CompareTool, ReportCommandWritesTheSamePage) {
  ASSERT_EQ(result_.code, 0) << result_.err;
  const ToolResult r = run_qkv(dir_, {"report", "--compare", "out", "-o", "again.html"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "wrote again.html"));
  const std::string html = read_text(dir_ / "again.html");
  EXPECT_EQ(html, read_text(dir_ / "out" / "report.html"));
  EXPECT_TRUE(has(html, "<td>rnn:additive</td>"));
  EXPECT_TRUE(has(html, "class=\"qkv-chart\""));
  EXPECT_TRUE(has(html, "class=\"qkv-heatmap\""));
}

TEST_F(CompareTool, RefusesToOverwriteAnEarlierComparisonUnlessAsked) {
  ASSERT_EQ(result_.code, 0) << result_.err;
  const ToolResult r = run_qkv(dir_, tiny_compare_args("out"));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "qkv compare: error: --out out: ")) << r.err;
  EXPECT_TRUE(has(r.err, "pass --overwrite")) << r.err;
}

// --reuse on a copy of the comparison: the finished variants are scored again without
// training (their model files untouched), a new one is trained, the table has all three.
TEST_F(CompareTool, ReuseScoresEarlierModelsAndTrainsOnlyNewVariants) {
  ASSERT_EQ(result_.code, 0) << result_.err;
  const fs::path copy = dir_ / "reused";
  fs::remove_all(copy);
  fs::copy(dir_ / "out", copy, fs::copy_options::recursive);
  const fs::path additive = copy / "models" / "rnn-additive" / "model.best.safetensors";
  const std::string before = read_text(additive);
  const auto stamp = fs::last_write_time(additive);
  std::vector<std::string> args = tiny_compare_args("reused");
  const auto v = std::find(args.begin(), args.end(), "--variants");
  *(v + 1) = "rnn:none,rnn:additive,transformer:h1";
  for (const char* extra : {"--reuse", "--bootstrap", "100"}) args.emplace_back(extra);
  const ToolResult r = run_qkv(dir_, args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "[1/3 rnn:none] reusing")) << r.err;
  EXPECT_TRUE(has(r.err, "[2/3 rnn:additive] reusing")) << r.err;
  EXPECT_TRUE(has(r.err, "[3/3 transformer:h1] training under --after 30u")) << r.err;
  EXPECT_TRUE(has(r.err, "from the earlier run (--reuse")) << r.err;  // the vocabulary
  EXPECT_EQ(read_text(additive), before);
  EXPECT_EQ(fs::last_write_time(additive), stamp);
  for (const char* row : {"rnn:none ", "rnn:additive ", "transformer:h1 "})
    EXPECT_EQ(lines_starting(r.out, row).size(), 1u) << row << " missing from:\n" << r.out;
  const auto json = nlohmann::json::parse(read_text(copy / "compare.json"));
  ASSERT_EQ(json["variants"].size(), 3u);
  EXPECT_EQ(json["variants"][1]["updates"], 30);  // the earlier run's training
  EXPECT_EQ(json["variants"][2]["model_dir"], "models/transformer-h1");
  EXPECT_EQ(json["variants"][2]["config"]["heads"], 1);  // --heads 2 overridden
  EXPECT_TRUE(json["variants"][1]["bleu_low"].is_number());
  EXPECT_TRUE(json["variants"][2]["attention_entropy"].is_number());
  EXPECT_TRUE(json["variants"][0]["attention_entropy"].is_null());  // rnn:none
  EXPECT_TRUE(has(json["notes"].dump(), "Reused (--reuse): rnn:additive, rnn:none"))
      << json["notes"].dump();
  // The same scores as the first run: the same models, test set and search.
  const auto first = nlohmann::json::parse(read_text(dir_ / "out" / "compare.json"));
  EXPECT_EQ(json["variants"][1]["bleu"], first["variants"][1]["bleu"]);

  // A reused model must match the flags: another size is refused before any training.
  std::vector<std::string> other = args;
  *(std::find(other.begin(), other.end(), "--dim-rnn") + 1) = "24";
  const ToolResult mismatch = run_qkv(dir_, other);
  EXPECT_EQ(mismatch.code, 2) << mismatch.err;
  EXPECT_TRUE(has(mismatch.err, "--reuse: ")) << mismatch.err;
  EXPECT_TRUE(has(mismatch.err, "another configuration")) << mismatch.err;
  EXPECT_EQ(read_text(additive), before);
}

// An interrupted --reuse run (here: a damaged model file) keeps the earlier training
// record of every variant it had not finished, so nothing has to be retrained.
TEST_F(CompareTool, InterruptedReuseKeepsTheEarlierRecordOfPendingVariants) {
  ASSERT_EQ(result_.code, 0) << result_.err;
  const fs::path copy = dir_ / "interrupted";
  fs::remove_all(copy);
  fs::copy(dir_ / "out", copy, fs::copy_options::recursive);
  {
    std::ofstream damage(copy / "models" / "rnn-additive" / "model.best.safetensors",
                         std::ios::trunc);
    damage << "not a model";
  }
  std::vector<std::string> args = tiny_compare_args("interrupted");
  args.emplace_back("--reuse");
  const ToolResult r = run_qkv(dir_, args);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "model.best.safetensors")) << r.err;
  const auto json = nlohmann::json::parse(read_text(copy / "compare.json"));
  ASSERT_EQ(json["variants"].size(), 3u) << json.dump();
  EXPECT_EQ(json["variants"][0]["name"], "rnn:none");  // scored again
  EXPECT_TRUE(json["variants"][0]["bleu_low"].is_number());
  EXPECT_EQ(json["variants"][1]["name"], "rnn:additive");  // the earlier record
  EXPECT_EQ(json["variants"][2]["name"], "transformer");
  EXPECT_EQ(json["variants"][2]["updates"], 30);
}

class CompareErrors : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_corpus_dir("compare_errors"); }
  void TearDown() override { fs::remove_all(dir_); }

  // The tiny comparison's flags with `extra` appended (or the test sets removed); a
  // --variants in `extra` replaces the tiny comparison's.
  ToolResult with(std::vector<std::string> extra, const std::string& drop = "") {
    std::vector<std::string> args = tiny_compare_args("out");
    if (!drop.empty()) {
      const auto it = std::find(args.begin(), args.end(), drop);
      args.erase(it, it + 3);  // the flag and two files
    }
    if (std::find(extra.begin(), extra.end(), "--variants") != extra.end()) {
      const auto it = std::find(args.begin(), args.end(), "--variants");
      args.erase(it, it + 2);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return run_qkv(dir_, args);
  }
  void expect_usage_error(const ToolResult& r, const std::string& part) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(has(r.err, "qkv compare: error: ")) << r.err;
    EXPECT_TRUE(has(r.err, part)) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out" / "vocab.spm")) << "work started before the check";
  }
  fs::path dir_;
};

TEST_F(CompareErrors, FlagMistakesAreUsageErrorsBeforeAnyWork) {
  expect_usage_error(with({}, "--test-sets"), "--test-sets");
  expect_usage_error(with({"--type", "rnn"}), "--type: compare sets each model's type");
  expect_usage_error(with({"--attention", "dot"}), "drop --attention");
  expect_usage_error(with({"--model", "m"}), "--model: compare writes each variant's model");
  expect_usage_error(with({"--resume"}), "--resume");
  expect_usage_error(with({"--variants", "rnn:bahdanau"}), "unknown attention 'bahdanau'");
  expect_usage_error(with({"--variants", "transformer:h3"}), "--heads");  // 16 % 3 != 0
  expect_usage_error(with({"--bootstrap", "-5"}), "--bootstrap");
  expect_usage_error(with({"--test-set", "a", "b"}), "unknown flag --test-set; did you mean");
  expect_usage_error(with({"--dim-embb", "8"}), "did you mean --dim-emb?");
  expect_usage_error(with({"--beam-size", "0"}), "--beam-size");
  expect_usage_error(with({"--variants", "rnn:none", "--input-feeding"}), "--input-feeding");
}

TEST_F(CompareErrors, MissingFilesAreRuntimeErrorsNamingThem) {
  std::vector<std::string> args = tiny_compare_args("out");
  *std::find(args.begin(), args.end(), "test.tgt") = "nope.tgt";
  const ToolResult r = run_qkv(dir_, args);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "nope.tgt")) << r.err;

  const ToolResult report = run_qkv(dir_, {"report", "--compare", "nowhere"});
  EXPECT_EQ(report.code, 1);
  EXPECT_TRUE(has(report.err,
                  "qkv report: error: --compare nowhere: no compare.json there; run "
                  "`qkv compare --out nowhere` first"))
      << report.err;
  const ToolResult demo = run_qkv(dir_, {"demo", "--data", "nowhere"});
  EXPECT_EQ(demo.code, 1);
  EXPECT_TRUE(has(demo.err, "qkv demo: error: --data nowhere: no train.en.gz there")) << demo.err;
}

TEST_F(CompareErrors, HelpListsCompareFlagsAndPointsToTrainFlags) {
  const ToolResult r = run_qkv(dir_, {"compare", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "--variants") && has(r.out, "--test-sets")) << r.out;
  EXPECT_TRUE(has(r.out, "Every `qkv train` flag is accepted too")) << r.out;
  for (const char* command : {"report", "demo"})
    EXPECT_EQ(run_qkv(dir_, {command, "--help"}).code, 0) << command;
}

}  // namespace
}  // namespace qkv
