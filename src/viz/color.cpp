#include "qkv/viz/color.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace qkv::viz {
namespace {

// matplotlib's viridis (van der Walt & Smith, 2015) sampled at 0, 1/8, ..., 1 (sRGB).
constexpr std::array<Rgb, 9> kViridis = {{{0x44, 0x01, 0x54},
                                          {0x47, 0x2D, 0x7B},
                                          {0x3B, 0x52, 0x8B},
                                          {0x2C, 0x72, 0x8E},
                                          {0x21, 0x90, 0x8C},
                                          {0x27, 0xAD, 0x81},
                                          {0x5D, 0xC8, 0x63},
                                          {0xAA, 0xDC, 0x32},
                                          {0xFD, 0xE7, 0x25}}};

uint8_t lerp(uint8_t a, uint8_t b, float t) {
  return static_cast<uint8_t>(std::lround(a + (static_cast<float>(b) - a) * t));
}

}  // namespace

Rgb color_at(ColorMap map, float value) {
  const float v = std::isnan(value) ? 0.0f : std::clamp(value, 0.0f, 1.0f);
  if (map == ColorMap::Gray) {
    const auto g = static_cast<uint8_t>(std::lround(255.0f * v));
    return {g, g, g};
  }
  const float pos = v * static_cast<float>(kViridis.size() - 1);
  const auto i = std::min(static_cast<size_t>(pos), kViridis.size() - 2);
  const float t = pos - static_cast<float>(i);
  const Rgb a = kViridis[i], b = kViridis[i + 1];
  return {lerp(a.r, b.r, t), lerp(a.g, b.g, t), lerp(a.b, b.b, t)};
}

std::string hex(Rgb c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "#";
  for (uint8_t v : {c.r, c.g, c.b}) {
    out += kDigits[v >> 4];
    out += kDigits[v & 15];
  }
  return out;
}

int xterm256(Rgb c) {
  // The cube's levels are 0, 95, 135, 175, 215, 255: nearest level per channel.
  const auto level = [](uint8_t v) {
    static constexpr int kLevels[] = {0, 95, 135, 175, 215, 255};
    int best = 0;
    for (int i = 1; i < 6; ++i)
      if (std::abs(kLevels[i] - v) < std::abs(kLevels[best] - v)) best = i;
    return best;
  };
  return 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b);
}

}  // namespace qkv::viz
