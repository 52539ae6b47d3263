// Whole-file reads and writes for tests, byte for byte (binary mode, no newline
// translation), failing the running test when the file system refuses.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::testing {

// Writes `bytes` as they are (replacing the file); returns `path`.
std::filesystem::path write_file(const std::filesystem::path& path, std::string_view bytes);
// One line per element, each ended by '\n'; returns `path`.
std::filesystem::path write_lines(const std::filesystem::path& path,
                                  const std::vector<std::string>& lines);
// The file's bytes; "" when it does not exist or cannot be read (tests check absence
// this way too).
std::string read_file(const std::filesystem::path& path);

}  // namespace qkv::testing
