// The heatmap as a PNG image through libpng.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <new>

#include "detail/file.h"
#include "detail/map.h"
#include "qkv/base/error.h"
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

}  // namespace

std::vector<uint8_t> encode_png(const AttentionMap& map, const PngOptions& options) {
  validate(map);
  QKV_CHECK(options.cell_px >= 1, ValueError, "encode_png: cell_px is ", options.cell_px,
            "; it must be >= 1");
  const size_t cell = static_cast<size_t>(options.cell_px);
  const size_t cols = map.source.size(), rows = map.target.size();
  QKV_CHECK(
      cols <= kMaxSide / cell && rows <= kMaxSide / cell && cols * cell * rows * cell <= kMaxPixels,
      ResourceError, "encode_png: ", detail::map_name(map), " at ", cell, " px per cell needs ",
      cols * cell, " x ", rows * cell, " px; the limits are ", kMaxSide, " px per side and ",
      kMaxPixels, " pixels: lower cell_px");
  const bool gray = options.color_map == ColorMap::Gray;
  const size_t channels = gray ? 1 : 3;
  const size_t width = cols * cell, height = rows * cell, stride = width * channels;

  std::vector<uint8_t> pixels(stride * height);
  for (size_t y = 0; y < height; ++y) {
    for (size_t x = 0; x < width; ++x) {
      const Rgb c = color_at(options.color_map, map.weights[(y / cell) * cols + x / cell]);
      uint8_t* p = &pixels[y * stride + x * channels];
      p[0] = c.r;
      if (!gray) {
        p[1] = c.g;
        p[2] = c.b;
      }
    }
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
