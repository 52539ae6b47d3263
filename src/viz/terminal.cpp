// The heatmap as text for a monospace terminal.
#include <algorithm>
#include <string>
#include <vector>

#include "detail/text.h"
#include "qkv/base/error.h"
#include "qkv/base/utf8.h"
#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

using detail::Glyph;

constexpr int kFrame = 3;  // " │" before the cells and "│" after them

struct Layout {
  std::vector<std::string> row_labels;            // [Tq] truncated target labels
  int label_width = 0;                            // display columns of the widest
  std::vector<std::vector<Glyph>> column_labels;  // [Tk] glyphs written top to bottom
  bool numbered = false;
  int cell_width = 2;        // a glyph of the vertical labels and a space between neighbours
  size_t panel_columns = 0;  // columns per panel
};

std::string spaces(int n) {
  return std::string(static_cast<size_t>(std::max(n, 0)), ' ');
}

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

void rstrip(std::string& line) {
  line.erase(line.find_last_not_of(' ') + 1);
}

Layout plan(const AttentionMap& map, const TerminalOptions& opt) {
  Layout l;
  for (const std::string& t : map.target) {
    l.row_labels.push_back(detail::truncate_to_width(t, opt.max_row_label_width));
    l.label_width = std::max(l.label_width, detail::display_width(l.row_labels.back()));
  }
  size_t tallest = 0;
  for (const std::string& s : map.source) tallest = std::max(tallest, detail::glyphs(s).size());
  const size_t cols = map.source.size();
  l.numbered = opt.column_labels == ColumnLabels::Numbered ||
               (opt.column_labels == ColumnLabels::Auto &&
                tallest > static_cast<size_t>(opt.max_label_height));
  // Cells stay two columns wide, a label glyph and a space, even when that takes more
  // panels: with one-column cells the vertical labels of neighbouring columns touched and
  // read as one word ("w1w2" down the page at --width 40).
  l.cell_width = 2;
  for (size_t c = 0; c < cols; ++c) {
    l.column_labels.push_back(
        detail::glyphs(l.numbered ? std::to_string(c + 1) : std::string_view(map.source[c])));
    for (Glyph& g : l.column_labels.back())
      if (g.width == 0) g.width = 1;  // a lone combining mark still takes its cell
  }
  // At least one column per panel, even when the row labels alone fill max_width.
  const int room = opt.max_width - l.label_width - kFrame;
  l.panel_columns = opt.max_width <= 0
                        ? cols
                        : std::min(cols, static_cast<size_t>(std::max(room / l.cell_width, 1)));
  return l;
}

std::string cell(float w, const Layout& l, bool color) {
  if (!color) {
    std::string glyph;
    utf8::append(glyph, shade_for(w));
    return repeat(glyph, static_cast<size_t>(l.cell_width));
  }
  // In colour the block is always full: the viridis colour carries the weight, and even a
  // zero weight shows as dark purple, so the grid stays visible.
  return "\x1b[38;5;" + std::to_string(xterm256(color_at(ColorMap::Viridis, w))) + "m" +
         repeat("\u2588", static_cast<size_t>(l.cell_width)) + "\x1b[0m";
}

// Column labels written top to bottom, aligned at the bottom so each ends above its column.
void header(std::string& out, const Layout& l, size_t begin, size_t end) {
  size_t height = 0;
  for (size_t c = begin; c < end; ++c) height = std::max(height, l.column_labels[c].size());
  for (size_t line = 0; line < height; ++line) {
    std::string text = spaces(l.label_width + 2);
    for (size_t c = begin; c < end; ++c) {
      const std::vector<Glyph>& g = l.column_labels[c];
      const size_t skip = height - g.size();
      if (line < skip || l.cell_width < g[line - skip].width) {
        text += spaces(l.cell_width);
      } else {
        text += g[line - skip].text + spaces(l.cell_width - g[line - skip].width);
      }
    }
    rstrip(text);
    out += text + '\n';
  }
}

void panel(std::string& out, const AttentionMap& map, const Layout& l, size_t begin, size_t end,
           bool color) {
  header(out, l, begin, end);
  const size_t width = (end - begin) * static_cast<size_t>(l.cell_width);
  out += spaces(l.label_width + 1) + "\u250C" + repeat("\u2500", width) + "\u2510\n";
  for (size_t r = 0; r < map.target.size(); ++r) {
    out += l.row_labels[r] + spaces(l.label_width - detail::display_width(l.row_labels[r]));
    out += " \u2502";
    for (size_t c = begin; c < end; ++c)
      out += cell(map.weights[r * map.source.size() + c], l, color);
    out += "\u2502\n";
  }
  out += spaces(l.label_width + 1) + "\u2514" + repeat("\u2500", width) + "\u2518\n";
}

// Entries joined by two spaces, wrapped so no line exceeds max_width (an entry wider than
// that gets a line of its own).
void wrap(std::string& out, const std::vector<std::string>& entries, int max_width) {
  std::string line;
  for (const std::string& entry : entries) {
    if (!line.empty() && max_width > 0 &&
        detail::display_width(line) + 2 + detail::display_width(entry) > max_width) {
      out += line + '\n';
      line.clear();
    }
    line += (line.empty() ? "" : "  ") + entry;
  }
  out += line + '\n';
}

// "1:the  2:cat  ..." for numbered columns.
std::vector<std::string> legend(const AttentionMap& map) {
  std::vector<std::string> entries;
  for (size_t c = 0; c < map.source.size(); ++c)
    entries.push_back(std::to_string(c + 1) + ":" + map.source[c]);
  return entries;
}

}  // namespace

std::string render_terminal(const AttentionMap& map, const TerminalOptions& options) {
  validate(map);
  QKV_CHECK(
      options.max_width >= 0 && options.max_label_height >= 1 && options.max_row_label_width >= 2,
      ValueError, "render_terminal: max_width (", options.max_width,
      ") must be >= 0, max_label_height (", options.max_label_height,
      ") >= 1 and max_row_label_width (", options.max_row_label_width, ") >= 2");
  const Layout l = plan(map, options);
  std::string out;
  if (!map.title.empty())
    out += (options.max_width > 0 ? detail::truncate_to_width(map.title, options.max_width)
                                  : map.title) +
           '\n';
  const size_t cols = map.source.size();
  for (size_t begin = 0; begin < cols; begin += l.panel_columns) {
    if (begin > 0) out += '\n';
    panel(out, map, l, begin, std::min(cols, begin + l.panel_columns), options.color);
  }
  if (l.numbered) wrap(out, legend(map), options.max_width);
  if (options.show_scale && !options.color)
    wrap(out,
         {"shades:", "\u2591 \u22650.125", "\u2592 \u22650.375", "\u2593 \u22650.625",
          "\u2588 \u22650.875"},
         options.max_width);
  if (options.show_scale && options.color)
    wrap(out, {"colours: viridis", "dark purple 0", "yellow 1"}, options.max_width);
  return out;
}

}  // namespace qkv::viz
