// Invalid maps, charts and options give a ValueError naming what is wrong, from every
// renderer, never a crash or a silently wrong picture.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "qkv/base/error.h"
#include "qkv/viz/chart.h"
#include "qkv/viz/heatmap.h"
#include "qkv/viz/report.h"

namespace qkv::viz {
namespace {

void expect_value_error(const std::function<void()>& fn, std::vector<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const ValueError& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
  }
}

AttentionMap good() {
  return {.source = {"a", "b"}, .target = {"x", "y"}, .weights = {1, 0, 0.5f, 0.5f}, .title = "t"};
}

// Every entry point that takes a map must reject it the same way.
void expect_rejected_everywhere(const AttentionMap& map, const std::vector<std::string>& parts) {
  expect_value_error([&] { validate(map); }, parts);
  expect_value_error([&] { render_terminal(map); }, parts);
  expect_value_error([&] { render_svg(map); }, parts);
  expect_value_error([&] { encode_png(map); }, parts);
  expect_value_error([&] { render_report({.samples = {map}}); }, parts);
}

TEST(VizErrors, WeightsNotMatchingTheTokens) {
  AttentionMap m = good();
  m.target.push_back("z");
  expect_rejected_everywhere(m, {"attention map 't'", "weights has 4 values",
                                 "3 target tokens (rows)", "2 source tokens (columns) need 6"});
}

TEST(VizErrors, NaNNegativeInfiniteAndTooLargeWeightsNameTheCell) {
  struct Case {
    float value;
    const char* what;
  };
  for (const Case c :
       {Case{std::numeric_limits<float>::quiet_NaN(), "is NaN"}, Case{-0.1f, "is negative"},
        Case{std::numeric_limits<float>::infinity(), "is infinite"}, Case{1.5f, "is above 1"}}) {
    AttentionMap m = good();
    m.weights[3] = c.value;
    expect_rejected_everywhere(m, {"weight at row 1 (target 'y'), column 1 (source 'b')", c.what});
  }
  AttentionMap slack = good();
  slack.weights[0] = 1.0005f;  // float sums of merged pieces may overshoot a little
  EXPECT_NO_THROW(validate(slack));
}

TEST(VizErrors, EmptyMaps) {
  expect_rejected_everywhere({}, {"attention map is empty", "0 target tokens, 0 source tokens"});
  AttentionMap no_target = good();
  no_target.target.clear();
  no_target.weights.clear();
  expect_rejected_everywhere(no_target, {"'t' is empty", "0 target tokens, 2 source tokens"});
}

TEST(VizErrors, InvalidUtf8Labels) {
  AttentionMap m = good();
  m.source[1] = "b\xC3";
  expect_rejected_everywhere(m, {"source token 1 is not valid UTF-8", "byte 2"});
}

TEST(VizErrors, MergeFlagsMustMatchTheTokens) {
  expect_value_error(
      [] {
        merge_subwords(good(), {true}, {true, true});
      },
      {"merge_subwords", "2 source tokens but 1 source word-start flags"});
  expect_value_error(
      [] {
        merge_subwords(good(), {true, true}, {true, false, true});
      },
      {"2 target tokens but 3 target word-start flags"});
}

TEST(VizErrors, BadOptions) {
  expect_value_error([] { render_terminal(good(), {.max_width = -1}); }, {"max_width (-1)"});
  expect_value_error([] { render_terminal(good(), {.max_row_label_width = 1}); },
                     {"max_row_label_width (1)"});
  expect_value_error([] { render_svg(good(), {.cell_size = 0}); }, {"cell_size (0)"});
}

BucketChart good_chart() {
  return {.buckets = {"1-10", "11-20"},
          .counts = {3, 4},
          .series = {{.name = "s", .values = {1.0, 2.0}}}};
}

TEST(VizErrors, InvalidCharts) {
  BucketChart c = good_chart();
  c.series[0].values.push_back(3.0);
  expect_value_error([&] { render_chart(c); }, {"series 's' has 3 values for 2 buckets"});
  c = good_chart();
  c.series[0].values[1] = std::nan("");
  expect_value_error([&] { render_chart(c); }, {"series 's', bucket '11-20'", "finite"});
  c = good_chart();
  c.series[0].values[0] = -1.0;
  expect_value_error([&] { render_chart(c); }, {"bucket '1-10'", ">= 0"});
  c = good_chart();
  c.series[0].ci = {Interval{2, 1}, std::nullopt};
  expect_value_error([&] { render_chart(c); }, {"low > high"});
  c = good_chart();
  c.series[0].ci = {Interval{0, 1}};
  expect_value_error([&] { render_chart(c); }, {"1 intervals for 2 buckets"});
  c = good_chart();
  c.counts = {1};
  expect_value_error([&] { render_chart(c); }, {"1 counts for 2 buckets"});
  c = good_chart();
  c.series.clear();
  expect_value_error([&] { render_chart(c); }, {"0 series"});
  expect_value_error([&] { render_report({.chart = c}); }, {"0 series"});
}

}  // namespace
}  // namespace qkv::viz
