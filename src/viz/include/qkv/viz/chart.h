// BLEU (or any non-negative score) by source-length bucket for several systems, as a
// self-contained SVG chart: how quality falls with sentence length, per model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qkv::viz {

// A confidence interval around one value, e.g. from bootstrap resampling.
struct Interval {
  double low = 0.0;
  double high = 0.0;
};

// One system's scores, one per bucket.
struct ChartSeries {
  std::string name;                           // legend entry, e.g. "rnn:additive"
  std::vector<std::optional<double>> values;  // [buckets]; unset: no score (gap)
  // [buckets] or empty: no whiskers. A value whose interval is unset while others have
  // one (a bucket too small to resample) is drawn faded, its count marked "no CI".
  std::vector<std::optional<Interval>> ci;
};

enum class ChartKind {
  Bar,   // grouped bars, one group per bucket
  Line,  // one polyline per system, broken where a value is unset
};

struct BucketChart {
  std::string title = "BLEU by source length";
  std::string x_label = "source length (words)";
  std::string y_label = "BLEU";
  std::vector<std::string> buckets;  // [buckets] labels, e.g. "1-10", ..., "50+"
  std::vector<int64_t> counts;       // [buckets] sentences per bucket, or empty: not shown
  std::vector<ChartSeries> series;   // [systems], at least one
  ChartKind kind = ChartKind::Bar;
  int width = 720;   // px
  int height = 400;  // px
};

// Throws ValueError naming the series and bucket unless: there is at least one bucket and
// one series, counts is empty or has one count >= 0 per bucket, every series has one value
// per bucket and ci is empty or has one entry per bucket, values and interval ends are
// finite and >= 0 with low <= high, width >= 200 and height >= 150, and all text is valid
// UTF-8.
void validate(const BucketChart& chart);

// The chart as an SVG document (no XML declaration, so it can be inlined into HTML):
// a y axis from 0 with round ticks, bucket labels with "n=<count>" below them, one colour
// per series with a legend, ci whiskers where given, a <title> tooltip on every bar or
// point ("series, bucket: value"). The root has class "qkv-chart"; text is XML-escaped.
std::string render_chart(const BucketChart& chart);

}  // namespace qkv::viz
