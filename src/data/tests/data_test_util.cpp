#include "data_test_util.h"

#include <zlib.h>

namespace qkv::data::testing {

std::filesystem::path write_gzip(const std::filesystem::path& path, std::string_view bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return path;
  // gzwrite takes at most UINT_MAX bytes per call; test data is far smaller.
  const int written =
      bytes.empty() ? 0 : gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  EXPECT_EQ(written, static_cast<int>(bytes.size()));
  EXPECT_EQ(gzclose(f), Z_OK);
  return path;
}

}  // namespace qkv::data::testing
