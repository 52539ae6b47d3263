// qkv demo end to end on a slice of the bundled Multi30k (data/multi30k): a 12-second
// budget (each model trains the demo's least, 5 s), the first 60 pairs, greedy search (so that a
// sanitizer build, whose barely trained models decode to the length limit, also finishes in
// minutes); it prints the three-row table and writes the report, as the full 15-minute run does.
#include "experiment_tool_util.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

TEST(DemoTool, RunsEndToEndWithinASmallBudget) {
  const fs::path dir = make_corpus_dir("demo_tool");
  const ToolResult r = run_qkv(dir, {"demo", "--minutes", "0.2", "--max-sentences", "60",
                                     "--beam-size", "1", "--out", "demo"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "[demo] Multi30k En->De")) << r.err;
  EXPECT_TRUE(has(r.err, "[1/3 rnn:none] training under --after")) << r.err;
  for (const char* v : {"rnn:none ", "rnn:additive ", "transformer "})
    EXPECT_EQ(lines_starting(r.out, v).size(), 1u) << v << " row missing from:\n" << r.out;
  // Under the table, what it found (experiment::finding, also the report's first line).
  EXPECT_EQ(lines_starting(r.out, "finding: ").size(), 1u) << r.out;
  for (const char* f : {"report.html", "compare.csv", "compare.json", "bleu_by_length.svg"})
    EXPECT_TRUE(fs::exists(dir / "demo" / f)) << f;
  const std::string hyps = read_text(dir / "demo" / "hyps" / "transformer.txt");
  EXPECT_EQ(std::count(hyps.begin(), hyps.end(), '\n'), 60);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qkv
