// The SVG heatmap is well-formed XML with one cell per weight, escaped labels and
// tooltips; and the well-formedness checker itself rejects broken documents.
#include <gtest/gtest.h>

#include "qkv/viz/heatmap.h"
#include "xml_check.h"

namespace qkv::viz {
namespace {

using testing::count;
using testing::xml_errors;

AttentionMap hostile() {
  return {.source = {"<b>", "R&D", "\"q\"", "it's"},
          .target = {"\u00FCber", "\u6771\u4EAC", "</svg>"},
          .weights = {1, 0, 0, 0, 0, 0.25f, 0.75f, 0, 0, 0, 0, 1},
          .title = "layer 1 <head 2>"};
}

TEST(XmlCheck, AcceptsWellFormedAndRejectsBroken) {
  EXPECT_EQ(xml_errors("<a x=\"1\"><b/>t &amp; &#233; &#x4E;</a>"), "");
  EXPECT_NE(xml_errors("<a><b></a></b>"), "");
  EXPECT_NE(xml_errors("<a>"), "");
  EXPECT_NE(xml_errors("<a>x < y</a>"), "");
  EXPECT_NE(xml_errors("<a>R&D</a>"), "");
  EXPECT_NE(xml_errors("<a x=\"<\"></a>"), "");
  EXPECT_NE(xml_errors("<a x=1></a>"), "");
  EXPECT_NE(xml_errors("<a x=\"1\" x=\"2\"></a>"), "");
  EXPECT_NE(xml_errors("<a></a><b></b>"), "");
  EXPECT_NE(xml_errors(""), "");
  EXPECT_EQ(xml_errors("<!DOCTYPE html><html><script>if (a < b && c) {}</script></html>", true),
            "");
  EXPECT_NE(xml_errors("<!DOCTYPE html><html><p>a < b</p></html>", true), "");
  EXPECT_EQ(count("abcabc", "bc"), 2u);
}

TEST(SvgHeatmap, WellFormedWithOneRectPerCell) {
  const std::string svg = render_svg(hostile());
  EXPECT_EQ(xml_errors(svg), "") << svg;
  EXPECT_EQ(count(svg, "<rect class=\"cell\""), 12u);
  EXPECT_EQ(count(svg, "<text class=\"src\""), 4u);
  EXPECT_EQ(count(svg, "<text class=\"tgt\""), 3u);
  EXPECT_EQ(count(svg, "<title>"), 12u + 1u);  // a tooltip per cell and the document's
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_NE(svg.find("class=\"scale\""), std::string::npos);
}

TEST(SvgHeatmap, LabelsAreEscaped) {
  const std::string svg = render_svg(hostile());
  for (const char* escaped : {"&lt;b&gt;", "R&amp;D", "&quot;q&quot;", "it&#39;s", "&lt;/svg&gt;",
                              "layer 1 &lt;head 2&gt;", "\u00FCber", "\u6771\u4EAC"})
    EXPECT_NE(svg.find(escaped), std::string::npos) << escaped;
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
}

TEST(SvgHeatmap, TooltipsAndColoursCarryTheWeights) {
  const std::string svg = render_svg(hostile(), {.color_map = ColorMap::Gray});
  EXPECT_NE(svg.find("<title>\u6771\u4EAC \u2192 &quot;q&quot;: 0.750</title>"), std::string::npos);
  EXPECT_NE(svg.find("data-row=\"1\" data-col=\"2\" data-w=\"0.750\""), std::string::npos);
  EXPECT_EQ(count(svg, "fill=\"#ffffff\"><title>"), 2u);  // the two weights of 1
  EXPECT_EQ(count(svg, "fill=\"#000000\"><title>"), 8u);  // the eight zeros
}

TEST(SvgHeatmap, SizeFollowsTheCells) {
  const std::string small = render_svg(hostile(), {.cell_size = 10});
  const std::string large = render_svg(hostile(), {.cell_size = 40});
  EXPECT_NE(small.find("width=\"10.0\" height=\"10.0\""), std::string::npos);
  EXPECT_NE(large.find("width=\"40.0\" height=\"40.0\""), std::string::npos);
  EXPECT_LT(small.size(), large.size() + 200);  // same structure, other numbers
}

}  // namespace
}  // namespace qkv::viz
