// The comparison's files and views: JSON round trip, CSV, the table, the chart, the
// report's content and write_report's errors.
#include "qkv/experiment/results.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "qkv/base/error.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

VariantResult variant(const std::string& name, double bleu) {
  VariantResult v;
  v.name = name;
  v.model_dir = "models/" + name;
  v.evaluated_file = "model.safetensors";
  v.config = R"({"type":"rnn"})";
  v.parameters = 1234567;
  v.updates = 42;
  v.epochs = 1;
  v.stop_reason = "time limit reached";
  v.train_seconds = 60.5;
  v.train_tokens = 100000;
  v.train_tokens_per_second = 1652.9;
  v.best_valid_loss = 3.25;
  v.test_sentences = 30;
  v.bleu = bleu;
  v.chrf = 40.126;
  v.bleu_line = "BLEU|nrefs:1 = 1";
  v.chrf_line = "chrF2|nrefs:1 = 2";
  v.by_length = {{"1-10", 20, bleu + 1, 50.0},
                 {"11-20", 10, bleu - 1, 45.0},
                 {"21-30", 0, std::nullopt, std::nullopt}};
  v.decode_seconds = 2.0;
  v.decode_sentences_per_second = 15.0;
  v.peak_rss_bytes = int64_t(300) << 20;
  v.wall_seconds = 75;
  return v;
}

Comparison two_variants() {
  Comparison c;
  c.title = "test comparison";
  c.notes = {"Command: qkv compare", "a note with \"quotes\", commas"};
  c.variants = {variant("rnn:none", 10.5), variant("transformer", 20.25)};
  c.variants[1].best_valid_loss.reset();
  return c;
}

TEST(ComparisonJson, RoundTripsEveryField) {
  const Comparison c = two_variants();
  EXPECT_EQ(comparison_from_json(to_json(c), "compare.json"), c);
}

// Intervals and entropy: written, read back, shown in the table, the CSV and the chart.
Comparison with_intervals_and_entropy() {
  Comparison c = two_variants();
  for (VariantResult& v : c.variants) {
    v.bleu_low = v.bleu - 1.5;
    v.bleu_high = v.bleu + 1.25;
    v.by_length[0].bleu_low = v.bleu - 0.5;
    v.by_length[0].bleu_high = v.bleu + 3;
  }
  c.variants[1].attention_entropy = 1.234;
  c.variants[1].attention_entropy_uniform = 2.5;
  return c;
}

TEST(ComparisonJson, RoundTripsIntervalsAndEntropy) {
  const Comparison c = with_intervals_and_entropy();
  EXPECT_EQ(comparison_from_json(to_json(c), "compare.json"), c);
}

TEST(ComparisonJson, ReadsFilesWrittenBeforeIntervalsAndEntropy) {
  // An earlier qkv wrote no such keys: they read as unset (a reused comparison's file).
  std::string json = to_json(two_variants());
  for (const std::string key :
       {"bleu_low", "bleu_high", "attention_entropy_uniform", "attention_entropy"}) {
    const std::string entry = "\"" + key + "\": null,";
    for (size_t at; (at = json.find(entry)) != std::string::npos;) {
      const size_t end = json.find('\n', at);
      json.erase(at, end - at + 1);
    }
  }
  ASSERT_EQ(json.find("bleu_low"), std::string::npos) << json;
  EXPECT_EQ(comparison_from_json(json, "compare.json"), two_variants());
}

TEST(SummaryTable, IntervalAndEntropyColumnsWhenMeasured) {
  const viz::ReportTable t = summary_table(with_intervals_and_entropy());
  const std::vector<std::string> expected = {"variant",
                                             "BLEU",
                                             "BLEU 95% CI",
                                             "chrF2",
                                             "BLEU 1-10 (n=20)",
                                             "BLEU 11-20 (n=10)",
                                             "attn entropy (uniform)",
                                             "updates",
                                             "train tok/s",
                                             "decode sent/s",
                                             "params",
                                             "peak RSS",
                                             "wall"};
  EXPECT_EQ(t.columns, expected);
  EXPECT_EQ(t.rows[0][2], "9.00-11.75");
  EXPECT_EQ(t.rows[0][6], "-");  // rnn:none has no attention
  EXPECT_EQ(t.rows[1][6], "1.23 (2.50)");
}

TEST(ComparisonCsv, CarriesIntervalsAndEntropy) {
  const std::string csv = to_csv(with_intervals_and_entropy());
  EXPECT_NE(csv.find(",bleu,chrf,bleu_low,bleu_high,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",bleu_low 1-10,bleu_high 1-10,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",attention_entropy,attention_entropy_uniform,"), std::string::npos);
  EXPECT_NE(csv.find(",20.25,40.126,18.75,21.5,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1.234,2.5,"), std::string::npos) << csv;
}

TEST(BleuChart, WhiskersFromBucketIntervals) {
  const viz::BucketChart chart = bleu_chart(with_intervals_and_entropy());
  ASSERT_EQ(chart.series[1].ci.size(), 2u);
  ASSERT_TRUE(chart.series[1].ci[0].has_value());
  EXPECT_DOUBLE_EQ(chart.series[1].ci[0]->low, 19.75);
  EXPECT_DOUBLE_EQ(chart.series[1].ci[0]->high, 23.25);
  EXPECT_FALSE(chart.series[1].ci[1].has_value());  // 11-20 has no interval
  EXPECT_NE(chart.title.find("95% bootstrap"), std::string::npos);
  EXPECT_TRUE(bleu_chart(two_variants()).series[0].ci.empty());  // no whiskers without
  EXPECT_NE(viz::render_chart(chart).find("qkv-chart"), std::string::npos);
}

TEST(ComparisonJson, NamesTheFileAndKeyOfWhatIsWrong) {
  const auto message = [](const std::string& json) {
    try {
      comparison_from_json(json, "dir/compare.json");
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{").find("dir/compare.json: not valid JSON"), std::string::npos);
  std::string json = to_json(two_variants());
  json.replace(json.find("\"bleu\": 20.25"), 13, "\"bleu\": \"20\"");
  EXPECT_NE(message(json).find("key 'variants[1].bleu' must be a number"), std::string::npos)
      << message(json);
  EXPECT_NE(message(R"({"title": "x", "notes": []})").find("key 'variants' is missing"),
            std::string::npos);
}

TEST(ComparisonCsv, HasAHeaderAndOneQuotedRowPerVariant) {
  Comparison c = two_variants();
  c.variants[0].name = "a,b";
  const std::string csv = to_csv(c);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_TRUE(csv.starts_with("variant,model_dir,parameters,updates,")) << csv;
  EXPECT_NE(csv.find(",bleu 11-20,"), std::string::npos);
  EXPECT_NE(csv.find("\n\"a,b\",models/rnn:none,1234567,42,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",20.25,40.126,"), std::string::npos) << csv;
}

TEST(SummaryTable, ShowsOnlyBucketsWithSentences) {
  const viz::ReportTable t = summary_table(two_variants());
  ASSERT_EQ(t.rows.size(), 2u);
  const std::vector<std::string> expected = {
      "variant", "BLEU",        "chrF2",         "BLEU 1-10 (n=20)", "BLEU 11-20 (n=10)",
      "updates", "train tok/s", "decode sent/s", "params",           "peak RSS",
      "wall"};
  EXPECT_EQ(t.columns, expected);
  const std::vector<std::string> row = {"transformer", "20.25", "40.13", "21.25",   "19.25", "42",
                                        "1653",        "15.0",  "1.23M", "300 MiB", "1m15s"};
  EXPECT_EQ(t.rows[1], row);
}

TEST(SummaryTable, FormatsAlignedText) {
  const std::string text = format_table(summary_table(two_variants()));
  std::vector<std::string> lines;
  for (size_t b = 0, e; (e = text.find('\n', b)) != std::string::npos; b = e + 1)
    lines.push_back(text.substr(b, e - b));
  ASSERT_EQ(lines.size(), 4u);  // header, rule, two rows
  EXPECT_TRUE(lines[0].starts_with("variant       BLEU  chrF2  BLEU 1-10 (n=20)")) << text;
  EXPECT_TRUE(lines[2].starts_with("rnn:none     10.50  40.13")) << text;
  EXPECT_EQ(lines[1].find_first_not_of('-'), std::string::npos);
}

TEST(BleuChart, OneSeriesPerVariantOverFilledBuckets) {
  const viz::BucketChart chart = bleu_chart(two_variants());
  EXPECT_EQ(chart.buckets, (std::vector<std::string>{"1-10", "11-20"}));
  EXPECT_EQ(chart.counts, (std::vector<int64_t>{20, 10}));
  ASSERT_EQ(chart.series.size(), 2u);
  EXPECT_EQ(chart.series[1].name, "transformer");
  EXPECT_DOUBLE_EQ(*chart.series[1].values[0], 21.25);
  EXPECT_THROW(bleu_chart(Comparison{}), ValueError);
}

viz::AttentionMap sample() {
  return {.source = {"a", "<b>"}, .target = {"x"}, .weights = {0.25f, 0.75f}, .title = "s 1"};
}

TEST(Samples, RoundTripThroughJson) {
  const auto back = samples_from_json(samples_to_json({sample()}), "samples.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].source, sample().source);
  EXPECT_EQ(back[0].weights, sample().weights);
  EXPECT_EQ(back[0].title, "s 1");
  // A map viz would reject is an IoError naming the file.
  std::string bad = samples_to_json({sample()});
  bad.replace(bad.find("0.75"), 4, "7.5");
  EXPECT_THROW(samples_from_json(bad, "samples.json"), IoError);
}

class ReportFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("qkv_experiment_results." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReportFiles, WritesEveryFileAndAReportWithTableChartAndHeatmaps) {
  write_results(dir_, two_variants(), {sample()});
  for (const char* f : {kCompareJson, kCompareCsv, kSamplesJson, kChartSvg})
    EXPECT_TRUE(fs::exists(dir_ / f)) << f;
  write_report(dir_, dir_ / "r.html");
  std::ifstream in(dir_ / "r.html");
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<td>transformer</td>"), std::string::npos);
  EXPECT_NE(html.find("class=\"qkv-chart\""), std::string::npos);
  EXPECT_NE(html.find("class=\"qkv-heatmap\""), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;"), std::string::npos);  // escaped, never markup
  EXPECT_NE(html.find("a note with &quot;quotes&quot;, commas"), std::string::npos);
}

TEST_F(ReportFiles, MissingComparisonSaysWhatToRun) {
  try {
    write_report(dir_, dir_ / "r.html");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("run `qkv compare --out"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
}

}  // namespace
}  // namespace qkv::experiment
