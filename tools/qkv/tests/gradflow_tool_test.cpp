// qkv gradflow end to end on tiny random models: the table, a well-formed CSV (one row per
// model and position, counts that fall with position) and SVG, --init, and errors.
#include <cmath>
#include <filesystem>
#include <map>

#include "decode_tool_util.h"
#include "xml_check.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

class GradflowToolTest : public DecodeToolTest {
 protected:
  void SetUp() override {
    DecodeToolTest::SetUp();
    make_model_dir("none", models::ModelType::Rnn, models::AttentionKind::None);
    make_model_dir("additive", models::ModelType::Rnn, models::AttentionKind::Additive);
    make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
    write("src.txt",
          "the red dog runs in the big park\na small cat\n\na man and a girl walk with the "
          "brown horse\n");
    write("ref.txt",
          "der rote hund lauft im grossen park\neine kleine katze\n\nein mann und ein madchen "
          "gehen mit dem braunen pferd\n");
  }
};

struct CsvRow {
  std::string model;
  int64_t position = 0, sentences = 0;
  double norm = 0;
};

std::vector<CsvRow> parse_csv(const std::string& text) {
  const std::vector<std::string> lines = lines_of(text);
  EXPECT_FALSE(lines.empty());
  if (lines.empty()) return {};
  EXPECT_EQ(lines[0], "model,position,sentences,mean_grad_norm");
  std::vector<CsvRow> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = split(lines[i], ",");
    EXPECT_EQ(f.size(), 4u) << lines[i];
    if (f.size() != 4) continue;
    rows.push_back({f[0], std::stoll(f[1]), std::stoll(f[2]), std::stod(f[3])});
  }
  return rows;
}

TEST_F(GradflowToolTest, PrintsTheTableAndWritesCsvAndSvg) {
  const Result r =
      qkv({"gradflow", "--model", "none", "additive", "tf", "--src", "src.txt", "--ref", "ref.txt",
           "--csv", "g.csv", "--svg", "g.svg", "--mini-batch", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "position")) << r.out;
  for (const char* name : {"rnn:none", "rnn:additive", "transformer"}) {
    EXPECT_TRUE(contains(r.out, name)) << r.out;
    EXPECT_TRUE(contains(r.err, std::string(name) + "): 3 sentences")) << r.err;
  }
  // One row per model and position 1..P, the counts never rising, every norm finite > 0
  // (the input site: every word reaches the loss in all three models).
  std::map<std::string, std::vector<CsvRow>> by_model;
  for (const CsvRow& row : parse_csv(slurp(dir_ / "g.csv"))) by_model[row.model].push_back(row);
  ASSERT_EQ(by_model.size(), 3u);
  for (const auto& [model, rows] : by_model) {
    ASSERT_FALSE(rows.empty()) << model;
    EXPECT_EQ(rows[0].sentences, 3) << model;
    for (size_t j = 0; j < rows.size(); ++j) {
      EXPECT_EQ(rows[j].position, int64_t(j + 1)) << model;
      EXPECT_TRUE(std::isfinite(rows[j].norm) && rows[j].norm > 0) << model << " " << j;
      if (j > 0) {
        EXPECT_LE(rows[j].sentences, rows[j - 1].sentences) << model;
      }
    }
    EXPECT_EQ(rows.back().sentences, 1) << model;  // only the longest sentence gets there
  }
  const std::string svg = slurp(dir_ / "g.svg");
  EXPECT_TRUE(svg.starts_with("<svg")) << svg.substr(0, 80);
  EXPECT_TRUE(contains(svg, "qkv-chart"));
  EXPECT_TRUE(contains(svg, "rnn:additive"));
  EXPECT_EQ(viz::testing::xml_errors(svg), "");
}

TEST_F(GradflowToolTest, OutputSiteAndInitialisation) {
  const Result r =
      qkv({"gradflow", "-m", "none", "--src", "src.txt", "--ref", "ref.txt", "--site", "output",
           "--init", "--seed", "3", "--max-sentences", "1", "--csv", "g.csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "rnn:none (init)")) << r.out;
  const std::vector<CsvRow> rows = parse_csv(slurp(dir_ / "g.csv"));
  ASSERT_GE(rows.size(), 3u);
  // The bottleneck's decoder reads the encoder output only at the first and last token.
  EXPECT_GT(rows.front().norm, 0);
  EXPECT_GT(rows.back().norm, 0);
  for (size_t j = 1; j + 1 < rows.size(); ++j) EXPECT_EQ(rows[j].norm, 0.0) << j;
}

TEST_F(GradflowToolTest, BadInputIsAnErrorNamingIt) {
  write("short.txt", "one line\n");
  Result r = qkv({"gradflow", "-m", "none", "--src", "src.txt", "--ref", "short.txt"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "short.txt")) << r.err;
  r = qkv({"gradflow", "-m", "missing", "--src", "src.txt", "--ref", "ref.txt"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "missing")) << r.err;
  r = qkv({"gradflow", "-m", "none", "--src", "src.txt", "--ref", "ref.txt", "--site", "middle"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "--site")) << r.err;
  r = qkv({"gradflow", "-m", "none", "--src", "src.txt", "--ref", "ref.txt", "--min-length", "500",
           "--max-length", "600"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "--min-length")) << r.err;
  r = qkv({"gradflow", "--src", "src.txt", "--ref", "ref.txt"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "--model")) << r.err;
  EXPECT_TRUE(lines_of(r.err).size() == 1) << r.err;
}

}  // namespace
}  // namespace qkv
