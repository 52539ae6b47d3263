// The heatmap as an SVG document.
#include <algorithm>
#include <string>

#include "detail/text.h"
#include "qkv/base/error.h"
#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

using detail::fixed;
using detail::xml_escape;

constexpr double kCharWidth = 0.6;  // em per display column: a sans-serif font's average
constexpr double kPad = 8.0;        // px around the drawing
constexpr int kScaleSteps = 20;     // rectangles in the colour scale

double text_width(const std::string& s, int font_size) {
  return detail::display_width(s) * kCharWidth * font_size;
}

struct Geometry {
  double left = 0, top = 0;  // the grid's top-left corner
  double cell = 0;
  double scale_x = 0, scale_height = 0;
  double width = 0, height = 0;
};

Geometry measure(const AttentionMap& map, const SvgOptions& opt) {
  Geometry g;
  double widest_target = 0, widest_source = 0;
  for (const std::string& t : map.target)
    widest_target = std::max(widest_target, text_width(t, opt.font_size));
  for (const std::string& s : map.source)
    widest_source = std::max(widest_source, text_width(s, opt.font_size));
  const double title = map.title.empty() ? 0.0 : 1.8 * opt.font_size;
  g.cell = opt.cell_size;
  g.left = kPad + widest_target + 6;
  g.top = kPad + title + widest_source + 6;
  const double grid_w = g.cell * static_cast<double>(map.source.size());
  const double grid_h = g.cell * static_cast<double>(map.target.size());
  g.scale_x = g.left + grid_w + 16;
  g.scale_height = std::max(grid_h, 100.0);
  g.width = std::max(g.scale_x + 12 + 6 + 3 * kCharWidth * opt.font_size + kPad,
                     kPad + text_width(map.title, opt.font_size) + kPad);
  g.height = g.top + std::max(grid_h, g.scale_height + 0.5 * opt.font_size) + kPad;
  return g;
}

void labels(std::string& out, const AttentionMap& map, const Geometry& g, int font_size) {
  const double baseline = 0.35 * font_size;  // centres a line of text on a y coordinate
  for (size_t c = 0; c < map.source.size(); ++c) {
    const double x = g.left + (static_cast<double>(c) + 0.5) * g.cell + baseline;
    out += "<text class=\"src\" data-col=\"" + std::to_string(c) + "\" transform=\"translate(" +
           fixed(x, 1) + "," + fixed(g.top - 6, 1) + ") rotate(-90)\">" +
           xml_escape(map.source[c]) + "</text>\n";
  }
  for (size_t r = 0; r < map.target.size(); ++r) {
    const double y = g.top + (static_cast<double>(r) + 0.5) * g.cell + baseline;
    out += "<text class=\"tgt\" data-row=\"" + std::to_string(r) + "\" x=\"" +
           fixed(g.left - 6, 1) + "\" y=\"" + fixed(y, 1) + "\" text-anchor=\"end\">" +
           xml_escape(map.target[r]) + "</text>\n";
  }
}

void cells(std::string& out, const AttentionMap& map, const Geometry& g, ColorMap color_map) {
  const size_t cols = map.source.size();
  for (size_t r = 0; r < map.target.size(); ++r) {
    for (size_t c = 0; c < cols; ++c) {
      const float w = map.weights[r * cols + c];
      const std::string weight = fixed(w, 3);
      out += "<rect class=\"cell\" data-row=\"" + std::to_string(r) + "\" data-col=\"" +
             std::to_string(c) + "\" data-w=\"" + weight + "\" x=\"" +
             fixed(g.left + static_cast<double>(c) * g.cell, 1) + "\" y=\"" +
             fixed(g.top + static_cast<double>(r) * g.cell, 1) + "\" width=\"" + fixed(g.cell, 1) +
             "\" height=\"" + fixed(g.cell, 1) + "\" fill=\"" + hex(color_at(color_map, w)) +
             "\"><title>" + xml_escape(map.target[r]) + " \u2192 " + xml_escape(map.source[c]) +
             ": " + weight + "</title></rect>\n";
    }
  }
}

// A vertical bar from 1 (top) to 0 (bottom) with ticks 0, 0.5 and 1.
void scale(std::string& out, const Geometry& g, ColorMap color_map, int font_size) {
  const double step = g.scale_height / kScaleSteps;
  out += "<g class=\"scale\">\n";
  for (int i = 0; i < kScaleSteps; ++i) {
    const float value = 1.0f - (static_cast<float>(i) + 0.5f) / kScaleSteps;
    out += "<rect x=\"" + fixed(g.scale_x, 1) + "\" y=\"" + fixed(g.top + i * step, 2) +
           "\" width=\"12\" height=\"" + fixed(step + 0.01, 2) + "\" fill=\"" +
           hex(color_at(color_map, value)) + "\"/>\n";
  }
  out += "<rect x=\"" + fixed(g.scale_x, 1) + "\" y=\"" + fixed(g.top, 1) +
         "\" width=\"12\" height=\"" + fixed(g.scale_height, 1) +
         "\" fill=\"none\" stroke=\"#888\" stroke-width=\"0.5\"/>\n";
  for (const auto& [value, label] : {std::pair{1.0, "1"}, {0.5, "0.5"}, {0.0, "0"}}) {
    const double y = g.top + (1.0 - value) * g.scale_height + 0.35 * font_size;
    out += "<text x=\"" + fixed(g.scale_x + 16, 1) + "\" y=\"" + fixed(y, 1) + "\">" + label +
           "</text>\n";
  }
  out += "</g>\n";
}

}  // namespace

std::string render_svg(const AttentionMap& map, const SvgOptions& options) {
  validate(map);
  QKV_CHECK(options.cell_size >= 1 && options.font_size >= 1, ValueError, "render_svg: cell_size (",
            options.cell_size, ") and font_size (", options.font_size, ") must be >= 1 px");
  const Geometry g = measure(map, options);
  std::string out;
  out.reserve(256 * map.weights.size() + 4096);
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"qkv-heatmap\" width=\"" +
         fixed(g.width, 0) + "\" height=\"" + fixed(g.height, 0) + "\" viewBox=\"0 0 " +
         fixed(g.width, 0) + " " + fixed(g.height, 0) +
         "\" font-family=\"DejaVu Sans, Noto Sans, Arial, sans-serif\" font-size=\"" +
         std::to_string(options.font_size) + "\">\n";
  // The document's <title> comes first (what screen readers and viewers announce), then
  // the white background, then the visible heading over it.
  if (!map.title.empty()) out += "<title>" + xml_escape(map.title) + "</title>\n";
  out += "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  if (!map.title.empty()) {
    out += "<text class=\"heading\" x=\"" + fixed(kPad, 1) + "\" y=\"" +
           fixed(kPad + options.font_size, 1) + "\" font-weight=\"bold\">" + xml_escape(map.title) +
           "</text>\n";
  }
  labels(out, map, g, options.font_size);
  cells(out, map, g, options.color_map);
  scale(out, g, options.color_map, options.font_size);
  out += "</svg>\n";
  return out;
}

}  // namespace qkv::viz
