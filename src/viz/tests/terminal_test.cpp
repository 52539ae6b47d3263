// The terminal heatmap: exact text for known maps, UTF-8 alignment, labels, panels.
#include <gtest/gtest.h>

#include <sstream>

#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

AttentionMap known() {
  return {.source = {"the", "cat", "sat", "."},
          .target = {"die", "Katze", "sa\u00DF"},
          .weights = {0.9f, 0.05f, 0.05f, 0.0f,  //
                      0.1f, 0.8f, 0.1f, 0.0f,    //
                      0.0f, 0.2f, 0.5f, 0.3f},
          .title = "demo"};
}

// Display columns of a line of ASCII, box drawing, shades and Latin-1 letters: one per
// code point (no wide characters in the maps that use this).
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Terminal, KnownMapExactText) {
  const std::string expected =
      "demo\n"
      "       t c s\n"
      "       h a a\n"
      "       e t t .\n"
      "      \u250C\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2510\n"
      "die   \u2502\u2588\u2588      \u2502\n"
      "Katze \u2502  \u2593\u2593    \u2502\n"
      "sa\u00DF   \u2502  \u2591\u2591\u2592\u2592\u2591\u2591\u2502\n"
      "      \u2514\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2518\n"
      "shades:  \u2591 \u22650.125  \u2592 \u22650.375  \u2593 \u22650.625  \u2588 \u22650.875\n";
  EXPECT_EQ(render_terminal(known()), expected);
}

TEST(Terminal, ShadeThresholds) {
  EXPECT_EQ(shade_for(0.0f), U' ');
  EXPECT_EQ(shade_for(0.124f), U' ');
  EXPECT_EQ(shade_for(0.125f), U'\u2591');
  EXPECT_EQ(shade_for(0.374f), U'\u2591');
  EXPECT_EQ(shade_for(0.375f), U'\u2592');
  EXPECT_EQ(shade_for(0.625f), U'\u2593');
  EXPECT_EQ(shade_for(0.875f), U'\u2588');
  EXPECT_EQ(shade_for(1.0f), U'\u2588');
}

TEST(Terminal, UmlautsAndCjkLineUp) {
  // "東京" is two wide characters (4 columns), "Größe" five narrow ones in 7 bytes; the
  // CJK source label "日本" takes a whole two-column cell per character.
  const AttentionMap map{.source = {"Haus", "\u65E5\u672C", "\u00C4rger"},
                         .target = {"Gr\u00F6\u00DFe", "\u6771\u4EAC", "x"},
                         .weights = {1, 0, 0, 0, 1, 0, 0, 0, 1}};
  const std::string expected =
      "           \u00C4\n"
      "       H   r\n"
      "       a   g\n"
      "       u \u65E5e\n"
      "       s \u672Cr\n"
      "      \u250C\u2500\u2500\u2500\u2500\u2500\u2500\u2510\n"
      "Gr\u00F6\u00DFe \u2502\u2588\u2588    \u2502\n"
      "\u6771\u4EAC  \u2502  \u2588\u2588  \u2502\n"
      "x     \u2502    \u2588\u2588\u2502\n"
      "      \u2514\u2500\u2500\u2500\u2500\u2500\u2500\u2518\n";
  EXPECT_EQ(render_terminal(map, {.show_scale = false}), expected);
}

TEST(Terminal, LongSourceLabelsAreNumberedWithALegend) {
  const AttentionMap map{
      .source = {"internationalisation", "a"}, .target = {"x"}, .weights = {0.5f, 0.5f}};
  const std::string expected =
      "   1 2\n"
      "  \u250C\u2500\u2500\u2500\u2500\u2510\n"
      "x \u2502\u2592\u2592\u2592\u2592\u2502\n"
      "  \u2514\u2500\u2500\u2500\u2500\u2518\n"
      "1:internationalisation  2:a\n";
  EXPECT_EQ(render_terminal(map, {.show_scale = false}), expected);
  // Forced vertical labels are written out in full.
  const std::string vertical =
      render_terminal(map, {.column_labels = ColumnLabels::Vertical, .show_scale = false});
  EXPECT_EQ(lines(vertical).size(), 20u + 3u);  // header, two borders, one row
  EXPECT_EQ(vertical.find("1:"), std::string::npos);
}

TEST(Terminal, WideGridsSplitIntoPanelsAndLabelsNeverTouch) {
  AttentionMap map{.target = {"row"}};
  for (int c = 0; c < 30; ++c) {
    map.source.push_back("w" + std::to_string(c));
    map.weights.push_back(c % 2 ? 1.0f : 0.0f);
  }
  for (const int width : {40, 20}) {
    const std::string text = render_terminal(map, {.max_width = width, .show_scale = false});
    size_t panel_count = 0;
    bool in_header = true;
    for (const std::string& line : lines(text)) {
      EXPECT_LE(code_points(line), size_t(width)) << line;
      if (line.find("\u250C") != std::string::npos) {
        ++panel_count;
        in_header = false;
      }
      if (line.find("\u2514") != std::string::npos) in_header = true;  // the next header
      // A header line: label glyphs at the even columns of the cells, spaces between.
      if (!in_header || line.find("\u2514") != std::string::npos) continue;
      const size_t first = 3 + 2;  // "row" and " │"
      for (size_t i = first + 1; i < line.size(); i += 2)
        EXPECT_EQ(line[i], ' ') << "labels touch at column " << i << " of '" << line << "'";
    }
    // Two-column cells: (width - 6) / 2 cells per panel.
    const size_t per_panel = size_t(width - 6) / 2;
    EXPECT_EQ(panel_count, (30 + per_panel - 1) / per_panel) << text;
  }
}

TEST(Terminal, RowLabelsWiderThanTheTerminalGiveOneColumnPerPanel) {
  const AttentionMap map{
      .source = {"a", "b", "c"}, .target = {"Donaudampfschifffahrt"}, .weights = {1, 0, 0}};
  const std::string text = render_terminal(map, {.max_width = 10, .show_scale = false});
  size_t panels = 0;
  for (const std::string& line : lines(text)) panels += line.find("\u250C") != std::string::npos;
  EXPECT_EQ(panels, 3u) << text;
}

TEST(Terminal, LongTargetLabelsAreTruncated) {
  const AttentionMap map{.source = {"a"}, .target = {"Donaudampfschifffahrt"}, .weights = {1}};
  const std::string text = render_terminal(map, {.max_row_label_width = 8, .show_scale = false});
  EXPECT_NE(text.find("Donauda\u2026 \u2502\u2588\u2588\u2502"), std::string::npos) << text;
}

TEST(Terminal, ColourUsesXterm256Blocks) {
  const std::string text = render_terminal(known(), {.color = true});
  // Weight 0.9 -> near-yellow viridis; weight 0 -> dark purple: both drawn as blocks.
  EXPECT_NE(text.find("\x1b[38;5;" + std::to_string(xterm256(color_at(ColorMap::Viridis, 0.9f))) +
                      "m\u2588\u2588\x1b[0m"),
            std::string::npos);
  EXPECT_NE(
      text.find("\x1b[38;5;" + std::to_string(xterm256(color_at(ColorMap::Viridis, 0.0f))) + "m"),
      std::string::npos);
  EXPECT_EQ(render_terminal(known()).find('\x1b'), std::string::npos);
}

TEST(Colors, EndsOfTheMaps) {
  EXPECT_EQ(hex(color_at(ColorMap::Viridis, 0.0f)), "#440154");
  EXPECT_EQ(hex(color_at(ColorMap::Viridis, 1.0f)), "#fde725");
  EXPECT_EQ(hex(color_at(ColorMap::Viridis, 0.5f)), "#21908c");
  EXPECT_EQ(hex(color_at(ColorMap::Gray, 0.5f)), "#808080");
  EXPECT_EQ(color_at(ColorMap::Gray, 2.0f), (Rgb{255, 255, 255}));  // clamped
  EXPECT_EQ(xterm256({0, 0, 0}), 16);
  EXPECT_EQ(xterm256({255, 255, 255}), 231);
}

}  // namespace
}  // namespace qkv::viz
