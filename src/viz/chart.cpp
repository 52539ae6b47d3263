// BLEU by source-length bucket as an SVG bar or line chart.
#include "qkv/viz/chart.h"

#include <algorithm>
#include <cmath>

#include "detail/text.h"
#include "qkv/base/error.h"

namespace qkv::viz {
namespace {

using detail::fixed;
using detail::xml_escape;

constexpr double kCharWidth = 0.6 * 12;  // px per display column at font-size 12

// Okabe & Ito's palette: distinguishable with every common colour-vision deficiency.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#F0E442", "#000000"};

const char* series_color(size_t i) {
  return kPalette[i % std::size(kPalette)];
}

void check_value(double v, const std::string& series, const std::string& bucket, const char* what) {
  QKV_CHECK(std::isfinite(v) && v >= 0.0, ValueError, "chart: series '", series, "', bucket '",
            bucket, "': ", what, " is ", v, "; scores must be finite and >= 0");
}

// The y axis: 0 to a round maximum, with a round step (1, 2 or 5 times a power of ten).
struct Axis {
  double max = 1.0, step = 0.2;
  int decimals = 1;
};

Axis y_axis(const BucketChart& chart) {
  double top = 0.0;
  for (const ChartSeries& s : chart.series) {
    for (const auto& v : s.values)
      if (v) top = std::max(top, *v);
    for (const auto& ci : s.ci)
      if (ci) top = std::max(top, ci->high);
  }
  if (top <= 0.0) return {};
  const double raw = top / 5.0;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw <= power       ? power
                      : raw <= 2 * power ? 2 * power
                      : raw <= 5 * power ? 5 * power
                                         : 10 * power;
  return {std::ceil(top / step - 1e-9) * step, step,
          std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)))};
}

struct Frame {
  double x0, x1, y0, y1;  // plot area
  Axis axis;
  double y(double v) const { return y1 - v / axis.max * (y1 - y0); }
};

// A value without the interval its series gives elsewhere: its bucket held too few
// sentences to resample (eval::ByLengthOptions::bootstrap_min_sentences), so the value is
// shown faded rather than with the same weight as the others.
bool without_interval(const ChartSeries& s, size_t b) {
  return !s.ci.empty() && s.values[b] && !s.ci[b];
}

bool any_without_interval(const BucketChart& chart, size_t b) {
  for (const ChartSeries& s : chart.series)
    if (without_interval(s, b)) return true;
  return false;
}

void axes(std::string& out, const BucketChart& chart, const Frame& f) {
  out += "<g class=\"axes\" font-size=\"11\">\n";
  for (int i = 0; i * f.axis.step <= f.axis.max * (1 + 1e-9); ++i) {
    const double v = i * f.axis.step, y = f.y(v);
    out += "<line x1=\"" + fixed(f.x0, 1) + "\" x2=\"" + fixed(f.x1, 1) + "\" y1=\"" + fixed(y, 1) +
           "\" y2=\"" + fixed(y, 1) + "\" stroke=\"#ddd\"/>\n";
    out += "<text class=\"tick\" x=\"" + fixed(f.x0 - 6, 1) + "\" y=\"" + fixed(y + 4, 1) +
           "\" text-anchor=\"end\">" + fixed(v, f.axis.decimals) + "</text>\n";
  }
  out += "<line x1=\"" + fixed(f.x0, 1) + "\" x2=\"" + fixed(f.x1, 1) + "\" y1=\"" +
         fixed(f.y1, 1) + "\" y2=\"" + fixed(f.y1, 1) + "\" stroke=\"#333\"/>\n";
  out += "<line x1=\"" + fixed(f.x0, 1) + "\" x2=\"" + fixed(f.x0, 1) + "\" y1=\"" +
         fixed(f.y0, 1) + "\" y2=\"" + fixed(f.y1, 1) + "\" stroke=\"#333\"/>\n";
  const double group = (f.x1 - f.x0) / static_cast<double>(chart.buckets.size());
  for (size_t b = 0; b < chart.buckets.size(); ++b) {
    const std::string cx = fixed(f.x0 + (static_cast<double>(b) + 0.5) * group, 1);
    out += "<text class=\"bucket\" x=\"" + cx + "\" y=\"" + fixed(f.y1 + 16, 1) +
           "\" text-anchor=\"middle\">" + xml_escape(chart.buckets[b]) + "</text>\n";
    if (!chart.counts.empty())
      out += "<text class=\"count\" x=\"" + cx + "\" y=\"" + fixed(f.y1 + 30, 1) +
             "\" text-anchor=\"middle\" fill=\"#666\">n=" + std::to_string(chart.counts[b]) +
             (any_without_interval(chart, b) ? " \u00B7 no CI" : "") + "</text>\n";
  }
  out += "</g>\n";
  out += "<text class=\"x-label\" x=\"" + fixed((f.x0 + f.x1) / 2, 1) + "\" y=\"" +
         fixed(f.y1 + 48, 1) + "\" text-anchor=\"middle\">" + xml_escape(chart.x_label) +
         "</text>\n";
  out += "<text class=\"y-label\" transform=\"translate(16," + fixed((f.y0 + f.y1) / 2, 1) +
         ") rotate(-90)\" text-anchor=\"middle\">" + xml_escape(chart.y_label) + "</text>\n";
}

std::string tooltip(const ChartSeries& s, const std::string& bucket, double v,
                    const std::optional<Interval>& ci) {
  std::string t = xml_escape(s.name) + ", " + xml_escape(bucket) + ": " + fixed(v, 2);
  if (ci) t += " [" + fixed(ci->low, 2) + ", " + fixed(ci->high, 2) + "]";
  return "<title>" + t + "</title>";
}

void whisker(std::string& out, const Frame& f, double x, const Interval& ci) {
  const std::string lo = fixed(f.y(ci.low), 1), hi = fixed(f.y(ci.high), 1);
  const std::string cx = fixed(x, 1), l = fixed(x - 4, 1), r = fixed(x + 4, 1);
  out += "<path class=\"ci\" d=\"M" + cx + " " + lo + "V" + hi + "M" + l + " " + lo + "H" + r +
         "M" + l + " " + hi + "H" + r + "\" stroke=\"#222\" fill=\"none\"/>\n";
}

void series(std::string& out, const BucketChart& chart, const Frame& f, size_t s) {
  const ChartSeries& ser = chart.series[s];
  const size_t n = chart.series.size();
  const double group = (f.x1 - f.x0) / static_cast<double>(chart.buckets.size());
  const double bar = group * 0.8 / static_cast<double>(n);
  const char* color = series_color(s);
  std::string path, points;  // the line goes under its points
  bool pen_down = false;
  out += "<g class=\"series\" data-series=\"" + std::to_string(s) + "\">\n";
  for (size_t b = 0; b < chart.buckets.size(); ++b) {
    const std::optional<Interval> ci = ser.ci.empty() ? std::nullopt : ser.ci[b];
    const double left = f.x0 + static_cast<double>(b) * group;
    double x = left + group / 2;
    if (!ser.values[b]) {
      pen_down = false;
      continue;
    }
    const double v = *ser.values[b];
    const std::string tip = tooltip(ser, chart.buckets[b], v, ci);
    if (chart.kind == ChartKind::Bar) {
      x = left + group * 0.1 + (static_cast<double>(s) + 0.5) * bar;
      const bool faded = without_interval(ser, b);
      out += std::string(faded ? "<rect class=\"bar few\"" : "<rect class=\"bar\"") + " x=\"" +
             fixed(x - bar / 2, 1) + "\" y=\"" + fixed(f.y(v), 1) + "\" width=\"" + fixed(bar, 1) +
             "\" height=\"" + fixed(f.y1 - f.y(v), 1) + "\" fill=\"" + color + "\"" +
             (faded ? std::string(" fill-opacity=\"0.3\" stroke=\"") + color +
                          "\" stroke-dasharray=\"3 2\""
                    : "") +
             ">" + tip + "</rect>\n";
    } else {
      x += (static_cast<double>(s) - (static_cast<double>(n) - 1) / 2) * 3;  // whiskers apart
      path += pen_down ? 'L' : 'M';
      path += fixed(x, 1) + " " + fixed(f.y(v), 1);
      pen_down = true;
      const bool faded = without_interval(ser, b);  // an open circle
      points += std::string(faded ? "<circle class=\"point few\"" : "<circle class=\"point\"") +
                " cx=\"" + fixed(x, 1) + "\" cy=\"" + fixed(f.y(v), 1) + "\" r=\"3.5\" fill=\"" +
                (faded ? std::string("#fff\" stroke=\"") + color : std::string(color)) + "\">" +
                tip + "</circle>\n";
    }
    if (ci) whisker(out, f, x, *ci);
  }
  if (!path.empty())
    out += "<path class=\"line\" d=\"" + path + "\" stroke=\"" + color +
           "\" stroke-width=\"2\" fill=\"none\"/>\n";
  out += points;
  out += "</g>\n";
}

void legend(std::string& out, const BucketChart& chart, const Frame& f) {
  out += "<g class=\"legend\">\n";
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const double y = f.y0 + static_cast<double>(s) * 18;
    out += "<rect x=\"" + fixed(f.x1 + 16, 1) + "\" y=\"" + fixed(y, 1) +
           "\" width=\"12\" height=\"12\" fill=\"" + series_color(s) + "\"/>\n";
    out += "<text x=\"" + fixed(f.x1 + 34, 1) + "\" y=\"" + fixed(y + 10, 1) + "\">" +
           xml_escape(chart.series[s].name) + "</text>\n";
  }
  out += "</g>\n";
}

}  // namespace

void validate(const BucketChart& chart) {
  QKV_CHECK(!chart.buckets.empty() && !chart.series.empty(), ValueError, "chart '", chart.title,
            "' has ", chart.buckets.size(), " buckets and ", chart.series.size(),
            " series; it needs at least one of each");
  QKV_CHECK(chart.width >= 200 && chart.height >= 150, ValueError, "chart: ", chart.width, "x",
            chart.height, " px is too small (at least 200x150)");
  for (const std::string* text : {&chart.title, &chart.x_label, &chart.y_label})
    detail::check_utf8(*text, "chart title/axis label");
  for (const std::string& b : chart.buckets) detail::check_utf8(b, "chart bucket label");
  QKV_CHECK(chart.counts.empty() || chart.counts.size() == chart.buckets.size(), ValueError,
            "chart: ", chart.counts.size(), " counts for ", chart.buckets.size(), " buckets");
  for (size_t b = 0; b < chart.counts.size(); ++b)
    QKV_CHECK(chart.counts[b] >= 0, ValueError, "chart: bucket '", chart.buckets[b],
              "' has a negative count (", chart.counts[b], ")");
  for (const ChartSeries& s : chart.series) {
    detail::check_utf8(s.name, "chart series name");
    QKV_CHECK(s.values.size() == chart.buckets.size(), ValueError, "chart: series '", s.name,
              "' has ", s.values.size(), " values for ", chart.buckets.size(), " buckets");
    QKV_CHECK(s.ci.empty() || s.ci.size() == chart.buckets.size(), ValueError, "chart: series '",
              s.name, "' has ", s.ci.size(), " intervals for ", chart.buckets.size(),
              " buckets (give none or one per bucket)");
    for (size_t b = 0; b < s.values.size(); ++b) {
      if (s.values[b]) check_value(*s.values[b], s.name, chart.buckets[b], "the value");
      if (s.ci.empty() || !s.ci[b]) continue;
      check_value(s.ci[b]->low, s.name, chart.buckets[b], "the interval's low end");
      check_value(s.ci[b]->high, s.name, chart.buckets[b], "the interval's high end");
      QKV_CHECK(s.ci[b]->low <= s.ci[b]->high, ValueError, "chart: series '", s.name, "', bucket '",
                chart.buckets[b], "': interval [", s.ci[b]->low, ", ", s.ci[b]->high,
                "] has low > high");
    }
  }
}

std::string render_chart(const BucketChart& chart) {
  validate(chart);
  double widest = 0;
  for (const ChartSeries& s : chart.series)
    widest = std::max(widest, detail::display_width(s.name) * kCharWidth);
  const double right = 16 + 18 + widest + 12;
  const Frame f{.x0 = 60,
                .x1 = std::max(120.0, chart.width - right),
                .y0 = 40,
                .y1 = chart.height - 60.0,
                .axis = y_axis(chart)};
  const double width = std::max<double>(chart.width, f.x1 + right);
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"qkv-chart\" width=\"" +
                    fixed(width, 0) + "\" height=\"" + std::to_string(chart.height) +
                    "\" viewBox=\"0 0 " + fixed(width, 0) + " " + std::to_string(chart.height) +
                    "\" font-family=\"DejaVu Sans, Noto Sans, Arial, sans-serif\" "
                    "font-size=\"12\">\n";
  out += "<title>" + xml_escape(chart.title) + "</title>\n";
  out += "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  out += "<text class=\"heading\" x=\"" + fixed(f.x0, 1) +
         "\" y=\"22\" font-size=\"14\" font-weight=\"bold\">" + xml_escape(chart.title) +
         "</text>\n";
  bool faded = false;
  for (size_t b = 0; b < chart.buckets.size(); ++b) faded = faded || any_without_interval(chart, b);
  if (faded)
    out += "<text class=\"faded-note\" x=\"" + fixed(f.x0, 1) +
           "\" y=\"36\" font-size=\"11\" fill=\"#666\">faded: a bucket with too few sentences "
           "for an interval (no CI)</text>\n";
  axes(out, chart, f);
  for (size_t s = 0; s < chart.series.size(); ++s) series(out, chart, f, s);
  legend(out, chart, f);
  out += "</svg>\n";
  return out;
}

}  // namespace qkv::viz
