#include "qkv/testing/files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace qkv::testing {

std::filesystem::path write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  EXPECT_TRUE(out.good()) << "could not write " << path;
  return path;
}

std::filesystem::path write_lines(const std::filesystem::path& path,
                                  const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + '\n';
  return write_file(path, text);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace qkv::testing
