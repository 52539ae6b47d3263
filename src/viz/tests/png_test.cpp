// PNG heatmaps: written, read back with libpng, size and pixels checked; the file is
// replaced through a temporary file.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "qkv/base/error.h"
#include "qkv/testing/scratch_dir.h"
#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

namespace fs = std::filesystem;

AttentionMap map_2x3() {
  return {.source = {"a", "b", "c"},
          .target = {"x", "y"},
          .weights = {0.0f, 0.25f, 0.75f,  //
                      1.0f, 0.5f, 0.0f}};
}

struct Image {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // RGB
  Rgb at(uint32_t x, uint32_t y) const {
    const uint8_t* p = &pixels[(static_cast<size_t>(y) * width + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

// Decodes with libpng's simplified API, converting any format to 8-bit RGB.
Image decode(const std::vector<uint8_t>& bytes, uint32_t* format = nullptr) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
      << image.message;
  if (format) *format = image.format;
  image.format = PNG_FORMAT_RGB;
  Image out{image.width, image.height, std::vector<uint8_t>(PNG_IMAGE_SIZE(image))};
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr))
      << image.message;
  return out;
}

std::vector<uint8_t> read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class PngFiles : public ::testing::Test {
 protected:
  qkv::testing::ScratchDir scratch_{"qkv_viz_png"};
  fs::path dir_ = scratch_.path();
};

TEST(Png, GrayscaleSizeAndPixels) {
  uint32_t format = 0;
  const Image img = decode(
      encode_png(map_2x3(), {.cell_px = 4, .color_map = ColorMap::Gray, .labels = false}), &format);
  EXPECT_EQ(format & PNG_FORMAT_FLAG_COLOR, 0u);  // stored as grayscale
  EXPECT_EQ(img.width, 12u);
  EXPECT_EQ(img.height, 8u);
  // Every pixel of a cell equals round(255 * weight).
  const float weights[2][3] = {{0.0f, 0.25f, 0.75f}, {1.0f, 0.5f, 0.0f}};
  for (uint32_t y = 0; y < img.height; ++y) {
    for (uint32_t x = 0; x < img.width; ++x) {
      const auto g = static_cast<uint8_t>(std::lround(255 * weights[y / 4][x / 4]));
      ASSERT_EQ(img.at(x, y), (Rgb{g, g, g})) << "pixel " << x << "," << y;
    }
  }
}

TEST(Png, ViridisPixels) {
  uint32_t format = 0;
  const Image img = decode(encode_png(map_2x3(), {.cell_px = 3, .labels = false}), &format);
  EXPECT_NE(format & PNG_FORMAT_FLAG_COLOR, 0u);
  EXPECT_EQ(img.width, 9u);
  EXPECT_EQ(img.height, 6u);
  EXPECT_EQ(img.at(0, 0), (Rgb{0x44, 0x01, 0x54}));  // weight 0
  EXPECT_EQ(img.at(2, 5), (Rgb{0xFD, 0xE7, 0x25}));  // row 1, col 0: weight 1
  EXPECT_EQ(img.at(4, 4), (Rgb{0x21, 0x90, 0x8C}));  // weight 0.5
  EXPECT_EQ(img.at(8, 0), color_at(ColorMap::Viridis, 0.75f));
}

TEST_F(PngFiles, WriteReplacesTheFileAndLeavesNoTemporary) {
  const fs::path path = dir_ / "map.png";
  { std::ofstream(path) << "old content"; }
  write_png(path, map_2x3(), {.cell_px = 2, .labels = false});
  const Image img = decode(read_all(path));
  EXPECT_EQ(img.width, 6u);
  EXPECT_EQ(img.height, 4u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(PngFiles, UnwritableDirectoryIsAnIoErrorNamingThePath) {
  const fs::path path = dir_ / "missing" / "map.png";
  try {
    write_png(path, map_2x3());
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST_F(PngFiles, FailedRenameRemovesTheTemporaryFile) {
  const fs::path path = dir_ / "taken";
  fs::create_directory(path);  // rename(file, directory) fails
  try {
    write_png(path, map_2x3());
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("rename failed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(Png, BadCellSizes) {
  EXPECT_THROW(encode_png(map_2x3(), {.cell_px = 0}), ValueError);
  EXPECT_THROW(encode_png(map_2x3(), {.cell_px = 20000}), ResourceError);
}

}  // namespace
}  // namespace qkv::viz
