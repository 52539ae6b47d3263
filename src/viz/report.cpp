// The comparison report: one self-contained HTML5 page.
#include "qkv/viz/report.h"

#include <charconv>
#include <string_view>

#include "detail/text.h"
#include "qkv/base/error.h"

namespace qkv::viz {
namespace {

using detail::xml_escape;

constexpr std::string_view kStyle = R"(
body { font-family: "DejaVu Sans", "Noto Sans", Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-bottom: 0.3em; }
.finding { font-size: 1.1em; margin: 0.6em 0 1em; }
details.method { margin: 0.5em 0 1em; }
details.method summary { cursor: pointer; color: #555; }
.note { color: #555; margin: 0.2em 0; }
.table-wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.45em; text-align: left; }
th { background: #f3f3f3; font-weight: 600; vertical-align: bottom; }
td { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1em 0; overflow-x: auto; }
.sample { margin: 1.5em 0; padding: 0.5em 1em; border: 1px solid #e3e3e3; border-radius: 4px; }
.sentence { margin: 0.3em 0; }
.sentence .side { color: #777; display: inline-block; min-width: 4.5em; }
.sw, .tw { padding: 0.05em 0.15em; border-radius: 3px; }
.tw { cursor: pointer; }
.tw.active { outline: 2px solid #D55E00; }
svg text.tgt { cursor: pointer; }
svg text.tgt.active { font-weight: bold; fill: #D55E00; }
svg rect.cell.active { stroke: #D55E00; stroke-width: 1; }
.hint { color: #777; font-size: 0.9em; }
)";

// Hovering (or focusing) a target word shades the source words by the weights of its
// row, read from the heatmap's cells (data-w): the data stays in escaped attributes and
// never enters the script.
constexpr std::string_view kScript = R"(
(function () {
  'use strict';
  function each(root, selector, fn) { Array.prototype.forEach.call(root.querySelectorAll(selector), fn); }
  function clear(sample) {
    each(sample, '.sw', function (el) { el.style.backgroundColor = ''; });
    each(sample, 'text.src', function (el) { el.style.opacity = ''; el.style.fontWeight = ''; });
    each(sample, '.active', function (el) { el.classList.remove('active'); });
  }
  function show(sample, row) {
    clear(sample);
    each(sample, 'rect.cell[data-row="' + row + '"]', function (cell) {
      var w = Math.min(1, Math.max(0, parseFloat(cell.getAttribute('data-w')) || 0));
      var col = cell.getAttribute('data-col');
      each(sample, '.sw[data-col="' + col + '"]', function (el) {
        el.style.backgroundColor = 'rgba(230, 159, 0, ' + w.toFixed(3) + ')';
      });
      each(sample, 'text.src[data-col="' + col + '"]', function (el) {
        el.style.opacity = (0.25 + 0.75 * w).toFixed(3);
        el.style.fontWeight = w >= 0.3 ? 'bold' : '';
      });
    });
    each(sample, '[data-row="' + row + '"]', function (el) { el.classList.add('active'); });
  }
  each(document, '.sample', function (sample) {
    each(sample, '.tw, text.tgt, rect.cell', function (el) {
      var row = el.getAttribute('data-row');
      el.addEventListener('mouseenter', function () { show(sample, row); });
      el.addEventListener('focus', function () { show(sample, row); });
    });
    sample.addEventListener('mouseleave', function () { clear(sample); });
  });
})();
)";

bool is_number(std::string_view s) {
  if (!s.empty() && (s.back() == '%' || s.back() == 'x')) s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

void check_report(const Report& r) {
  detail::check_utf8(r.title, "report title");
  detail::check_utf8(r.finding, "report finding");
  for (const std::string& n : r.notes) detail::check_utf8(n, "report note");
  const ReportTable& t = r.table;
  QKV_CHECK(!t.columns.empty() || t.rows.empty(), ValueError, "report table has ", t.rows.size(),
            " rows but no columns");
  for (const std::string& c : t.columns) detail::check_utf8(c, "report table column name");
  for (size_t i = 0; i < t.rows.size(); ++i) {
    QKV_CHECK(t.rows[i].size() == t.columns.size(), ValueError, "report table row ", i + 1, " has ",
              t.rows[i].size(), " cells but there are ", t.columns.size(), " columns");
    for (const std::string& c : t.rows[i])
      detail::check_utf8(c, qkv::detail::concat("report table row ", i + 1));
  }
  if (r.chart) validate(*r.chart);
  for (const AttentionMap& m : r.samples) validate(m);
}

void table(std::string& out, const ReportTable& t) {
  // Headers may wrap at their spaces, numbers never (td: nowrap); the wrapper scrolls
  // rather than let a very wide table push the page wider than the window.
  out +=
      "<section id=\"comparison\">\n<h2>Comparison</h2>\n<div class=\"table-wrap\">\n<table>\n"
      "<thead><tr>";
  for (const std::string& c : t.columns) out += "<th>" + xml_escape(c) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const std::vector<std::string>& row : t.rows) {
    out += "<tr>";
    for (const std::string& c : row)
      out += (is_number(c) ? "<td class=\"num\">" : "<td>") + xml_escape(c) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n</div>\n</section>\n";
}

// A sentence as one <span> per token. Target words (is_target) are focusable, so the
// highlight also works from the keyboard.
void words(std::string& out, const std::vector<std::string>& tokens, bool is_target) {
  out += std::string("<p class=\"sentence\"><span class=\"side\">") +
         (is_target ? "target" : "source") + "</span>";
  for (size_t i = 0; i < tokens.size(); ++i) {
    out += std::string(i ? " " : "") +
           (is_target ? "<span class=\"tw\" tabindex=\"0\" data-row=\""
                      : "<span class=\"sw\" data-col=\"") +
           std::to_string(i) + "\">" + xml_escape(tokens[i]) + "</span>";
  }
  out += "</p>\n";
}

void samples(std::string& out, const std::vector<AttentionMap>& maps) {
  out += "<section id=\"attention\">\n<h2>Attention</h2>\n";
  out +=
      "<p class=\"hint\">Hover a target word (in the sentence, on the heatmap's left or "
      "its row) to shade the source words by the weight they get.</p>\n";
  for (size_t i = 0; i < maps.size(); ++i) {
    AttentionMap untitled = maps[i];
    untitled.title.clear();  // the caption is the <h3>
    out += "<div class=\"sample\" data-sample=\"" + std::to_string(i) + "\">\n";
    out += "<h3>" +
           xml_escape(maps[i].title.empty() ? "Sample " + std::to_string(i + 1) : maps[i].title) +
           "</h3>\n";
    words(out, maps[i].source, /*is_target=*/false);
    words(out, maps[i].target, /*is_target=*/true);
    out += "<figure class=\"heatmap\">\n" + render_svg(untitled) + "</figure>\n</div>\n";
  }
  out += "</section>\n";
}

}  // namespace

std::string render_report(const Report& report) {
  check_report(report);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  out += "<title>" + xml_escape(report.title) + "</title>\n";
  out += "<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  out += "<h1>" + xml_escape(report.title) + "</h1>\n";
  if (!report.finding.empty())
    out += "<p class=\"finding\"><strong>" + xml_escape(report.finding) + "</strong></p>\n";
  if (!report.notes.empty()) {
    out += "<details class=\"method\">\n<summary>Method: how this comparison was run</summary>\n";
    for (const std::string& n : report.notes)
      out += "<p class=\"note\">" + xml_escape(n) + "</p>\n";
    out += "</details>\n";
  }
  if (!report.table.columns.empty()) table(out, report.table);
  if (report.chart) {
    out += "<section id=\"by-length\">\n<h2>Quality by source length</h2>\n<figure>\n" +
           render_chart(*report.chart) + "</figure>\n</section>\n";
  }
  if (!report.samples.empty()) samples(out, report.samples);
  out += "<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace qkv::viz
