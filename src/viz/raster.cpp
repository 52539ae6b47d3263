// The PNG heatmap's canvas (detail/raster.h).
#include "detail/raster.h"

#include "detail/bitmap_font.h"

namespace qkv::viz::detail {

Canvas::Canvas(size_t width, size_t height, Rgb background)
    : width_(width), height_(height), pixels_(width * height * 3) {
  fill(0, 0, long(width), long(height), background);
}

Rgb Canvas::at(size_t x, size_t y) const {
  const uint8_t* p = &pixels_[(y * width_ + x) * 3];
  return {p[0], p[1], p[2]};
}

void Canvas::dot(long x, long y, Rgb c) {
  if (x < 0 || y < 0 || size_t(x) >= width_ || size_t(y) >= height_) return;
  uint8_t* p = &pixels_[(size_t(y) * width_ + size_t(x)) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

void Canvas::fill(long x, long y, long w, long h, Rgb c) {
  for (long j = y; j < y + h; ++j)
    for (long i = x; i < x + w; ++i) dot(i, j, c);
}

void Canvas::text(long x, long y, std::u32string_view s, int scale, Rgb c) {
  for (const char32_t ch : s) {
    const GlyphBitmap g = glyph_bitmap(ch);
    for (int row = 0; row < kFontHeight; ++row)
      for (int col = 0; col < 5; ++col)
        if (g[size_t(row)] & (1u << (4 - col)))
          fill(x + long(col * scale), y + long(row * scale), scale, scale, c);
    x += long(kFontWidth * scale);
  }
}

void Canvas::text_up(long x, long bottom, std::u32string_view s, int scale, Rgb c) {
  // Horizontal text's pixel (along, down) lands at (x + down, bottom - 1 - along).
  long along = 0;
  for (const char32_t ch : s) {
    const GlyphBitmap g = glyph_bitmap(ch);
    for (int row = 0; row < kFontHeight; ++row)
      for (int col = 0; col < 5; ++col)
        if (g[size_t(row)] & (1u << (4 - col)))
          fill(x + long(row * scale), bottom - along - long((col + 1) * scale), scale, scale, c);
    along += long(kFontWidth * scale);
  }
}

long text_length(std::u32string_view s, int scale) {
  return long(s.size()) * kFontWidth * scale;
}

}  // namespace qkv::viz::detail
