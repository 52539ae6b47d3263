// The BLEU-by-length chart and the HTML report: expected elements, well-formedness, and
// hostile strings escaped.
#include <gtest/gtest.h>

#include "qkv/base/error.h"
#include "qkv/viz/chart.h"
#include "qkv/viz/report.h"
#include "xml_check.h"

namespace qkv::viz {
namespace {

using testing::count;
using testing::xml_errors;

BucketChart chart() {
  return {.buckets = {"1-10", "11-20", "50+"},
          .counts = {120, 45, 0},
          .series = {{.name = "rnn:none", .values = {20.5, 12.25, std::nullopt}},
                     {.name = "transformer",
                      .values = {31.0, 28.0, std::nullopt},
                      .ci = {Interval{29.5, 32.5}, Interval{26.0, 30.0}, std::nullopt}}}};
}

AttentionMap sample() {
  return {.source = {"the", "<script>alert(1)</script>", "house"},
          .target = {"das", "Haus"},
          .weights = {0.8f, 0.1f, 0.1f, 0.05f, 0.05f, 0.9f},
          .title = "sentence 1 & 2"};
}

TEST(Chart, BarsLabelsCountsWhiskersAndLegend) {
  const std::string svg = render_chart(chart());
  EXPECT_EQ(xml_errors(svg), "") << svg;
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 4u);  // 2 series x 2 buckets with a score
  EXPECT_EQ(count(svg, "<path class=\"ci\""), 2u);
  for (const char* label :
       {">1-10<", ">11-20<", ">50+<", ">n=120<", ">n=45<", ">n=0<", ">rnn:none<", ">transformer<",
        ">BLEU<", ">source length (words)<", ">BLEU by source length<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  EXPECT_NE(svg.find("<title>transformer, 1-10: 31.00 [29.50, 32.50]</title>"), std::string::npos);
  // Round ticks: the highest value (32.5) is under a top tick of 40 in steps of 10.
  for (const char* tick : {">0</text>", ">10</text>", ">20</text>", ">30</text>", ">40</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">50</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">35</text>"), std::string::npos);
}

TEST(Chart, ValuesWithoutTheirIntervalAreFadedAndCountedAsSuch) {
  BucketChart c = chart();
  c.series[1].values[2] = 25.0;  // 50+: a value, but too few sentences (0 here) for a CI
  const std::string svg = render_chart(c);
  EXPECT_EQ(xml_errors(svg), "") << svg;
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 4u);
  EXPECT_EQ(count(svg, "<rect class=\"bar few\""), 1u);
  EXPECT_NE(svg.find("fill-opacity=\"0.3\""), std::string::npos);
  EXPECT_NE(svg.find(">n=0 \u00B7 no CI<"), std::string::npos);
  EXPECT_NE(svg.find(">n=120<"), std::string::npos);  // buckets with an interval unchanged
  EXPECT_NE(svg.find("class=\"faded-note\""), std::string::npos);
  // A series that has no interval anywhere is not faded: nothing was resampled at all.
  EXPECT_EQ(render_chart(chart()).find("few"), std::string::npos);
  c.kind = ChartKind::Line;
  const std::string lines = render_chart(c);
  EXPECT_EQ(xml_errors(lines), "") << lines;
  EXPECT_EQ(count(lines, "<circle class=\"point few\""), 1u);
}

TEST(Chart, LinesBreakAtMissingValues) {
  BucketChart c = chart();
  c.kind = ChartKind::Line;
  c.series[0].values = {10.0, std::nullopt, 5.0};
  c.counts.clear();
  const std::string svg = render_chart(c);
  EXPECT_EQ(xml_errors(svg), "") << svg;
  EXPECT_EQ(count(svg, "<circle class=\"point\""), 4u);
  EXPECT_EQ(count(svg, "<path class=\"line\""), 2u);
  EXPECT_EQ(svg.find("n="), std::string::npos);  // no counts given
  // rnn:none's path starts twice (M ... M ...): the gap is not bridged.
  const size_t first = svg.find("<path class=\"line\" d=\"");
  const std::string d = svg.substr(first, svg.find('"', first + 22) - first);
  EXPECT_EQ(count(d, "M"), 2u) << d;
  EXPECT_EQ(count(d, "L"), 0u) << d;
}

TEST(Chart, HostileNamesAreEscaped) {
  BucketChart c = chart();
  c.series[0].name = "<script>alert('x')</script>";
  c.buckets[0] = "a&b";
  c.title = "\"quoted\"";
  const std::string svg = render_chart(c);
  EXPECT_EQ(xml_errors(svg), "") << svg;
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b"), std::string::npos);
}

TEST(Chart, AllZeroScoresStillHaveAnAxis) {
  BucketChart c = chart();
  for (ChartSeries& s : c.series) {
    s.values = {0.0, 0.0, 0.0};
    s.ci.clear();
  }
  const std::string svg = render_chart(c);
  EXPECT_EQ(xml_errors(svg), "");
  EXPECT_NE(svg.find(">1.0</text>"), std::string::npos);
}

Report report() {
  return {.title = "qkv <compare>",
          .notes = {"qkv compare --variants rnn:none,transformer"},
          .table = {.columns = {"model", "BLEU", "params"},
                    .rows = {{"rnn:none", "12.30", "1.2M"}, {"<script>x</script>", "31.0", "7"}}},
          .chart = chart(),
          .samples = {sample(), sample()}};
}

TEST(Report, SelfContainedValidPageWithAllParts) {
  const std::string html = render_report(report());
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
  EXPECT_EQ(xml_errors(html, /*html=*/true), "");
  EXPECT_NE(html.find("<meta charset=\"utf-8\"/>"), std::string::npos);
  // Nothing is fetched: no external scripts, styles, images or fonts.
  for (const char* external : {"src=", "href=", "@import", "url(", "http://", "https://"}) {
    const size_t at = html.find(external);
    const bool only_svg_namespace = std::string(external) == "http://" &&
                                    count(html, "http://") == count(html, "xmlns=\"http://");
    EXPECT_TRUE(at == std::string::npos || only_svg_namespace) << external;
  }
  EXPECT_EQ(count(html, "<table>"), 1u);
  EXPECT_EQ(count(html, "<th>"), 3u);
  EXPECT_EQ(count(html, "<td class=\"num\">"), 3u);  // 12.30, 31.0 and 7, not "1.2M"
  EXPECT_EQ(count(html, "<svg "), 1u + 2u);          // the chart and two heatmaps
  EXPECT_EQ(count(html, "class=\"sample\""), 2u);
  EXPECT_EQ(count(html, "<span class=\"tw\" tabindex=\"0\" data-row="), 4u);
  EXPECT_EQ(count(html, "<span class=\"sw\" data-col="), 6u);
  EXPECT_NE(html.find("<h3>sentence 1 &amp; 2</h3>"), std::string::npos);
  EXPECT_NE(html.find("mouseenter"), std::string::npos);
}

TEST(Report, TheFindingComesFirstAndTheMethodIsCollapsed) {
  Report r = report();
  r.finding = "transformer is best: 31.0 BLEU, 2.5× rnn:none (12.30) & more";
  const std::string html = render_report(r);
  EXPECT_EQ(xml_errors(html, true), "");
  const size_t h1 = html.find("</h1>"), finding = html.find("<p class=\"finding\">"),
               method = html.find("<details class=\"method\">"),
               note = html.find("qkv compare --variants"), table = html.find("<table>");
  ASSERT_NE(finding, std::string::npos);
  EXPECT_NE(html.find("2.5× rnn:none (12.30) &amp; more"), std::string::npos);
  EXPECT_LT(h1, finding);
  EXPECT_LT(finding, method);
  EXPECT_LT(method, note);
  EXPECT_LT(note, html.find("</details>"));
  EXPECT_LT(html.find("</details>"), table);
  EXPECT_EQ(html.find("<details class=\"method\" open"), std::string::npos);  // collapsed
  // The table scrolls inside its wrapper instead of widening the page.
  EXPECT_NE(html.find("<div class=\"table-wrap\">\n<table>"), std::string::npos);
  // Without a finding or notes neither element is written.
  const std::string bare = render_report({.table = r.table});
  EXPECT_EQ(bare.find("class=\"finding\""), std::string::npos);
  EXPECT_EQ(bare.find("<details"), std::string::npos);
}

TEST(Report, HostileTokensAreEscapedNotExecuted) {
  const std::string html = render_report(report());
  EXPECT_EQ(count(html, "<script"), 1u);  // only the report's own script
  EXPECT_EQ(count(html, "</script"), 1u);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;script&gt;x&lt;/script&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<title>qkv &lt;compare&gt;</title>"), std::string::npos);
}

TEST(Report, EmptyReportIsStillAPage) {
  const std::string html = render_report({});
  EXPECT_EQ(xml_errors(html, true), "");
  EXPECT_EQ(html.find("<table>"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

TEST(Report, RaggedTableRowsNameTheRow) {
  Report r = report();
  r.table.rows[1].pop_back();
  try {
    render_report(r);
    ADD_FAILURE() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("row 2 has 2 cells but there are 3 columns"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qkv::viz
