// Labelled PNG heatmaps: the bare grid sits inside the labelled image unchanged, each
// target token is drawn left of its row and each source token above its column (changing
// a token changes only its own label's pixels), the colour scale runs from 1 at the top to
// 0 at the bottom, and long labels are cut instead of growing the image.
#include <gtest/gtest.h>
#include <png.h>

#include <optional>

#include "qkv/base/error.h"
#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

struct Image {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // RGB
  Rgb at(uint32_t x, uint32_t y) const {
    const uint8_t* p = &pixels[(size_t(y) * width + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

Image decode(const std::vector<uint8_t>& bytes) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
      << image.message;
  image.format = PNG_FORMAT_RGB;
  Image out{image.width, image.height, std::vector<uint8_t>(PNG_IMAGE_SIZE(image))};
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr))
      << image.message;
  return out;
}

AttentionMap sentence() {
  return {.source = {"Ein", "Hund", "läuft", "</s>"},
          .target = {"A", "dog", "runs", "</s>"},
          .weights = {0.9f, 0.1f, 0.0f, 0.0f,  //
                      0.1f, 0.8f, 0.1f, 0.0f,  //
                      0.0f, 0.2f, 0.7f, 0.1f,  //
                      0.0f, 0.0f, 0.1f, 0.9f},
          .title = "line 1"};
}

struct Point {
  uint32_t x = 0, y = 0;
};

// Where `part` appears in `whole` pixel for pixel (the first place), if anywhere.
std::optional<Point> find(const Image& whole, const Image& part) {
  for (uint32_t y = 0; y + part.height <= whole.height; ++y)
    for (uint32_t x = 0; x + part.width <= whole.width; ++x) {
      bool same = true;
      for (uint32_t j = 0; j < part.height && same; ++j)
        for (uint32_t i = 0; i < part.width && same; ++i)
          same = whole.at(x + i, y + j) == part.at(i, j);
      if (same) return Point{x, y};
    }
  return std::nullopt;
}

bool is_ink(Rgb c) {
  return c.r < 128 && c.r == c.g && c.g == c.b;
}

// Ink pixels in the rectangle [x0, x1) × [y0, y1).
int ink_in(const Image& img, uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1) {
  int n = 0;
  for (uint32_t y = y0; y < y1; ++y)
    for (uint32_t x = x0; x < x1; ++x) n += is_ink(img.at(x, y));
  return n;
}

constexpr uint32_t kCell = 24;

TEST(PngLabels, TheGridSitsInsideWithTitleLabelsAndScaleAroundIt) {
  const AttentionMap map = sentence();
  const Image bare = decode(encode_png(map, {.cell_px = kCell, .labels = false}));
  const Image img = decode(encode_png(map, {.cell_px = kCell}));
  const std::optional<Point> grid = find(img, bare);
  ASSERT_TRUE(grid) << "the grid is not drawn unchanged";
  const uint32_t gx = grid->x, gy = grid->y, gw = bare.width, gh = bare.height;
  EXPECT_GT(gx, 3 * 12u);  // room for "runs" (12 px a character at the default scale)
  EXPECT_GT(gy, 5 * 12u);  // room for "läuft" turned upright
  // Each row's label left of it, each column's above it.
  for (uint32_t r = 0; r < 4; ++r)
    EXPECT_GT(ink_in(img, 0, gy + r * kCell, gx, gy + (r + 1) * kCell), 10) << "row " << r;
  for (uint32_t c = 0; c < 4; ++c)
    EXPECT_GT(ink_in(img, gx + c * kCell, 0, gx + (c + 1) * kCell, gy), 10) << "column " << c;
  // The title on the first line, and nothing drawn below the grid's last row but the scale.
  EXPECT_GT(ink_in(img, 0, 0, img.width, 8 + 22), 20);
  EXPECT_EQ(ink_in(img, 0, gy + gh, gx + gw, img.height), 0);
  // The colour scale: a column right of the grid, 1's colour level with the grid's top,
  // running down (at least the grid's height) to 0's colour.
  bool found = false;
  for (uint32_t x = gx + gw; x < img.width && !found; ++x) {
    if (img.at(x, gy) != color_at(ColorMap::Viridis, 1.0f)) continue;
    uint32_t bottom = gy;
    while (bottom + 1 < img.height && img.at(x, bottom + 1) != Rgb{255, 255, 255}) ++bottom;
    found = bottom >= gy + gh - 1 && img.at(x, bottom) == color_at(ColorMap::Viridis, 0.0f) &&
            img.at(x, (gy + bottom) / 2) ==
                color_at(ColorMap::Viridis, 1.0f - float((bottom - gy) / 2) / float(bottom - gy));
  }
  EXPECT_TRUE(found) << "no colour scale right of the grid";
}

TEST(PngLabels, ATokenChangesOnlyItsOwnLabel) {
  const AttentionMap map = sentence();
  const Image img = decode(encode_png(map));
  AttentionMap other_source = map, other_target = map;
  other_source.source[1] = "Kater";  // no longer than "läuft": the layout stays
  other_target.target[2] = "walk";
  const Image a = decode(encode_png(other_source)), b = decode(encode_png(other_target));
  const Image bare = decode(encode_png(map, {.labels = false}));
  const Point g = *find(img, bare);
  ASSERT_EQ(a.width, img.width);
  ASSERT_EQ(a.height, img.height);
  ASSERT_EQ(b.width, img.width);
  ASSERT_EQ(b.height, img.height);
  int changed_a = 0, changed_b = 0;
  for (uint32_t y = 0; y < img.height; ++y)
    for (uint32_t x = 0; x < img.width; ++x) {
      if (a.at(x, y) != img.at(x, y)) {
        ++changed_a;
        EXPECT_TRUE(y < g.y && x >= g.x + kCell && x < g.x + 2 * kCell)
            << "source label 1 changed pixel " << x << "," << y;
      }
      if (b.at(x, y) != img.at(x, y)) {
        ++changed_b;
        EXPECT_TRUE(x < g.x && y >= g.y + 2 * kCell && y < g.y + 3 * kCell)
            << "target label 2 changed pixel " << x << "," << y;
      }
    }
  EXPECT_GT(changed_a, 0);
  EXPECT_GT(changed_b, 0);
}

TEST(PngLabels, LongLabelsAreCutAndSmallCellsLowerTheFont) {
  AttentionMap map = sentence();
  const Image normal = decode(encode_png(map));
  map.source[0] = std::string(500, 'x');
  map.target[0] = std::string(500, 'y');
  const Image cut = decode(encode_png(map));
  const Image longer = decode(encode_png(map, {.max_label_chars = 30}));
  EXPECT_LE(cut.width, normal.width + 20 * 12);
  EXPECT_LE(cut.height, normal.height + 20 * 12);
  EXPECT_EQ(longer.width - cut.width, 10u * 12);  // 30 instead of 20 characters
  // 12 px cells take the font at scale 1: half the label room of scale 2.
  const Image small = decode(encode_png(sentence(), {.cell_px = 12}));
  EXPECT_LT(small.width, normal.width);
  EXPECT_THROW(encode_png(sentence(), {.cell_px = 10}), ValueError);  // no room for a line
  EXPECT_NO_THROW(encode_png(sentence(), {.cell_px = 10, .labels = false}));
  EXPECT_THROW(encode_png(sentence(), {.font_scale = 0}), ValueError);
  EXPECT_THROW(encode_png(sentence(), {.max_label_chars = 1}), ValueError);
}

TEST(PngLabels, GrayImagesAreGrayWithLabels) {
  const Image img = decode(encode_png(sentence(), {.color_map = ColorMap::Gray}));
  int ink = 0;
  for (uint32_t y = 0; y < img.height; ++y)
    for (uint32_t x = 0; x < img.width; ++x) {
      const Rgb c = img.at(x, y);
      ASSERT_TRUE(c.r == c.g && c.g == c.b);
      ink += c.r == 34;
    }
  EXPECT_GT(ink, 100);
}

}  // namespace
}  // namespace qkv::viz
