// One self-contained HTML page comparing systems: a table, the BLEU-by-length chart and
// attention heatmaps of sample sentences. Inline CSS, JS and SVG only (no external
// resource, so it opens offline and can be mailed around).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qkv/viz/chart.h"
#include "qkv/viz/heatmap.h"

namespace qkv::viz {

// A table of strings; the caller formats the numbers. Cells that parse as numbers are
// right-aligned.
struct ReportTable {
  std::vector<std::string> columns;            // [C] header
  std::vector<std::vector<std::string>> rows;  // [R][C]
};

struct Report {
  std::string title = "qkv comparison";
  // One line under the title saying what the comparison found, computed by the caller from
  // the results (experiment::finding); omitted when empty.
  std::string finding;
  // How it was run (command, data, budget, machine): paragraphs in a collapsed "Method"
  // section, so the finding and the table come first.
  std::vector<std::string> notes;
  ReportTable table;                  // omitted when it has no columns
  std::optional<BucketChart> chart;   // BLEU by length
  std::vector<AttentionMap> samples;  // heatmaps; each map's title is its caption
};

// The page as HTML5 text. Each sample shows its heatmap and the sentence pair as words;
// hovering a target word (its row label, its cells or the word in the sentence) shades
// every source word by the weight it gets, in plain JS. All text is HTML-escaped, and no
// data goes into the script, so a token like "<script>" is inert.
// Throws ValueError when the table's rows do not have one cell per column (naming the
// row), or when the chart or a sample is invalid (see validate()).
std::string render_report(const Report& report);

}  // namespace qkv::viz
