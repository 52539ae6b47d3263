// The heatmap as a PNG image through libpng: the grid of weights with its title, its
// token labels and a colour scale drawn in qkv's own bitmap font (detail/bitmap_font.h).
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "detail/bitmap_font.h"
#include "detail/file.h"
#include "detail/map.h"
#include "detail/raster.h"
#include "detail/text.h"
#include "qkv/base/error.h"
#include "qkv/base/utf8.h"
#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

constexpr size_t kMaxSide = 32768;              // px; far beyond any sentence pair
constexpr size_t kMaxPixels = size_t{1} << 26;  // 64 Mpx: 192 MiB of RGB in memory

// libpng reports errors by longjmp. Nothing in the frames it jumps over may own
// resources, so its callbacks only copy into this plain struct, and the vectors live in
// the caller of write_rows(), outside the jump.
struct Sink {
  std::vector<uint8_t>* bytes = nullptr;
  bool out_of_memory = false;
  char message[256] = {};
};

void on_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<Sink*>(png_get_error_ptr(png));
  std::strncpy(sink->message, message, sizeof sink->message - 1);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // nothing the caller could act on

void on_write(png_structp png, png_bytep data, png_size_t size) {
  auto* sink = static_cast<Sink*>(png_get_io_ptr(png));
  bool failed = false;
  try {
    sink->bytes->insert(sink->bytes->end(), data, data + size);
  } catch (const std::bad_alloc&) {
    failed = true;  // png_error() below, outside the handler: never longjmp out of a catch
  }
  if (failed) {
    sink->out_of_memory = true;
    png_error(png, "out of memory");
  }
}

void on_flush(png_structp) {}

// Encodes rows[] (height pointers to width * channels bytes); false when libpng failed.
bool write_rows(png_structp png, png_infop info, png_bytep* rows, uint32_t width, uint32_t height,
                int color_type) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, width, height, 8, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

// Where everything goes on a labelled image (all in pixels).
struct PngLayout {
  int scale = 1;                               // font pixels per glyph pixel
  long grid_x = 0, grid_y = 0;                 // the grid's top-left corner
  long bar_x = 0, bar_height = 0;              // the colour scale's column and height
  size_t width = 0, height = 0;                // the whole image
  std::u32string title;                        // truncated
  std::vector<std::u32string> source, target;  // truncated labels
};

constexpr long kMargin = 8, kGap = 6, kBarWidth = 12;
constexpr size_t kMaxTitleChars = 80;
constexpr Rgb kPaper{255, 255, 255}, kInk{34, 34, 34};

std::u32string shortened(std::string_view label, size_t max_chars) {
  std::u32string s = utf8::decode(label);
  if (s.size() > max_chars) {
    s.resize(max_chars - 1);
    s += U'\u2026';
  }
  return s;
}

size_t longest(const std::vector<std::u32string>& labels) {
  size_t n = 0;
  for (const std::u32string& s : labels) n = std::max(n, s.size());
  return n;
}

PngLayout plan(const AttentionMap& map, const PngOptions& o, size_t cell) {
  PngLayout l;
  l.scale = std::min(o.font_scale, int(cell) / detail::kFontHeight);
  QKV_CHECK(l.scale >= 1, ValueError, "encode_png: cell_px ", cell, " is too small for labels (",
            detail::kFontHeight, " px a line at least); raise cell_px or set labels = false");
  const long advance = long(detail::kFontWidth * l.scale),
             line = long(detail::kFontHeight * l.scale);
  const size_t max_chars = size_t(o.max_label_chars);
  l.title = shortened(map.title, kMaxTitleChars);
  for (const std::string& s : map.source) l.source.push_back(shortened(s, max_chars));
  for (const std::string& t : map.target) l.target.push_back(shortened(t, max_chars));
  const long title_height = l.title.empty() ? 0 : line + kGap;
  l.grid_x = kMargin + long(longest(l.target)) * advance + kGap;
  l.grid_y = kMargin + title_height + long(longest(l.source)) * advance + kGap;
  const long grid_w = long(map.source.size() * cell), grid_h = long(map.target.size() * cell);
  l.bar_x = l.grid_x + grid_w + 2 * kGap;
  l.bar_height = std::max(grid_h, 5 * line);  // room for its three labels
  const long right = l.bar_x + kBarWidth + 2 * kGap + 3 * advance + kMargin;
  l.width = size_t(std::max(right, 2 * kMargin + long(l.title.size()) * advance));
  l.height = size_t(std::max(l.grid_y + grid_h, l.grid_y + l.bar_height + line / 2) + kMargin);
  return l;
}

// Title, labels and colour scale around the grid.
void draw_labels(detail::Canvas& canvas, const PngLayout& l, ColorMap color_map, size_t cell) {
  const int s = l.scale;
  const long line = long(detail::kFontHeight * s);
  canvas.text(kMargin, kMargin, l.title, s, kInk);
  const long centre = (long(cell) - line) / 2;
  for (size_t r = 0; r < l.target.size(); ++r)
    canvas.text(l.grid_x - kGap - detail::text_length(l.target[r], s),
                l.grid_y + long(r * cell) + centre, l.target[r], s, kInk);
  for (size_t c = 0; c < l.source.size(); ++c)
    canvas.text_up(l.grid_x + long(c * cell) + centre, l.grid_y - kGap, l.source[c], s, kInk);
  for (long y = 0; y < l.bar_height; ++y) {
    const float value = 1.0f - float(y) / float(std::max(l.bar_height - 1, 1L));
    canvas.fill(l.bar_x, l.grid_y + y, kBarWidth, 1, color_at(color_map, value));
  }
  const long label_x = l.bar_x + kBarWidth + 2 * kGap;
  const std::pair<long, std::u32string_view> ticks[] = {
      {l.grid_y, U"1"}, {l.grid_y + l.bar_height / 2, U"0.5"}, {l.grid_y + l.bar_height - 1, U"0"}};
  for (const auto& [y, text] : ticks) {
    canvas.fill(l.bar_x + kBarWidth, y, kGap / 2, 1, kInk);  // a tick mark
    canvas.text(label_x, y - line / 2, text, s, kInk);
  }
}

}  // namespace

std::vector<uint8_t> encode_png(const AttentionMap& map, const PngOptions& options) {
  validate(map);
  QKV_CHECK(options.cell_px >= 1, ValueError, "encode_png: cell_px is ", options.cell_px,
            "; it must be >= 1");
  QKV_CHECK(!options.labels || (options.font_scale >= 1 && options.font_scale <= 16 &&
                                options.max_label_chars >= 2),
            ValueError, "encode_png: font_scale (", options.font_scale,
            ") must be in [1, 16] and max_label_chars (", options.max_label_chars, ") >= 2");
  const size_t cell = static_cast<size_t>(options.cell_px);
  const size_t cols = map.source.size(), rows = map.target.size();
  QKV_CHECK(
      cols <= kMaxSide / cell && rows <= kMaxSide / cell && cols * cell * rows * cell <= kMaxPixels,
      ResourceError, "encode_png: ", detail::map_name(map), " at ", cell, " px per cell needs ",
      cols * cell, " x ", rows * cell, " px; the limits are ", kMaxSide, " px per side and ",
      kMaxPixels, " pixels: lower cell_px");
  PngLayout layout;
  if (options.labels) {
    layout = plan(map, options, cell);
  } else {
    layout.width = cols * cell;
    layout.height = rows * cell;
  }
  QKV_CHECK(layout.width <= kMaxSide && layout.height <= kMaxSide &&
                layout.width * layout.height <= kMaxPixels,
            ResourceError, "encode_png: ", detail::map_name(map), " with its labels needs ",
            layout.width, " x ", layout.height, " px; the limits are ", kMaxSide,
            " px per side and ", kMaxPixels, " pixels: lower cell_px or font_scale");
  detail::Canvas canvas(layout.width, layout.height, kPaper);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c)
      canvas.fill(layout.grid_x + long(c * cell), layout.grid_y + long(r * cell), long(cell),
                  long(cell), color_at(options.color_map, map.weights[r * cols + c]));
  if (options.labels) draw_labels(canvas, layout, options.color_map, cell);

  const bool gray = options.color_map == ColorMap::Gray;
  const size_t channels = gray ? 1 : 3;
  const size_t width = layout.width, height = layout.height, stride = width * channels;
  std::vector<uint8_t> pixels;
  if (gray) {  // every colour drawn is a gray: keep one channel
    pixels.resize(width * height);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = canvas.rgb()[i * 3];
  } else {
    pixels = canvas.rgb();
  }
  std::vector<png_bytep> row_pointers(height);
  for (size_t y = 0; y < height; ++y) row_pointers[y] = &pixels[y * stride];

  std::vector<uint8_t> bytes;
  Sink sink{.bytes = &bytes};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
  if (png == nullptr) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    throw std::bad_alloc();
  }
  png_set_write_fn(png, &sink, on_write, on_flush);
  const bool ok =
      write_rows(png, info, row_pointers.data(), static_cast<uint32_t>(width),
                 static_cast<uint32_t>(height), gray ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB);
  png_destroy_write_struct(&png, &info);
  if (sink.out_of_memory) throw std::bad_alloc();
  QKV_CHECK(ok, InternalError, "encode_png: libpng failed: ", sink.message);
  return bytes;
}

void write_png(const std::filesystem::path& path, const AttentionMap& map,
               const PngOptions& options) {
  const std::vector<uint8_t> bytes = encode_png(map, options);
  detail::replace_file(path, bytes);
}

}  // namespace qkv::viz
