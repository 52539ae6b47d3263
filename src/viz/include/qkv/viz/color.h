// Colour maps shared by the SVG, PNG and terminal renderers.
#pragma once

#include <cstdint>
#include <string>

namespace qkv::viz {

enum class ColorMap {
  Viridis,  // perceptually uniform, dark blue (0) to yellow (1); readable in grayscale
  Gray,     // black (0) to white (1), as in Bahdanau et al. (2015), figure 3
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

// The colour of `value`, clamped to [0, 1] (NaN counts as 0). Viridis is interpolated
// linearly in sRGB between nine samples of matplotlib's viridis (at 0, 1/8, ..., 1), close
// enough for a heatmap; Gray is round(255 * value) on all channels.
Rgb color_at(ColorMap map, float value);

// "#rrggbb"
std::string hex(Rgb c);

// The xterm 256-colour palette entry nearest to `c` in its 6×6×6 cube (16..231).
int xterm256(Rgb c);

}  // namespace qkv::viz
