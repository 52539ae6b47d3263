// Private: an RGB pixel canvas with rectangles and bitmap-font text, what the PNG
// heatmap is drawn on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "qkv/viz/color.h"

namespace qkv::viz::detail {

class Canvas {
 public:
  Canvas(size_t width, size_t height, Rgb background);

  size_t width() const { return width_; }
  size_t height() const { return height_; }
  const std::vector<uint8_t>& rgb() const { return pixels_; }  // row-major, 3 bytes a pixel
  Rgb at(size_t x, size_t y) const;

  // Pixels outside the canvas are clipped, so callers may draw at its edges.
  void fill(long x, long y, long w, long h, Rgb c);
  // UTF-8 text with its top-left corner at (x, y), each font pixel a scale × scale square;
  // it advances kFontWidth * scale pixels per character.
  void text(long x, long y, std::u32string_view s, int scale, Rgb c);
  // The same text turned a quarter left, read bottom to top: it starts at (x, bottom) and
  // runs upwards, the tops of its letters facing left (as rotated axis labels are).
  void text_up(long x, long bottom, std::u32string_view s, int scale, Rgb c);

 private:
  void dot(long x, long y, Rgb c);

  size_t width_, height_;
  std::vector<uint8_t> pixels_;
};

// The pixels `s` takes along its line at `scale`.
long text_length(std::u32string_view s, int scale);

}  // namespace qkv::viz::detail
