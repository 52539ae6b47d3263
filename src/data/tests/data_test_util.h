// Helpers for the data tests: qkv_test_support's per-test directory, files and typed-error
// checks, plus gzip writing with zlib (only data reads .gz).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "qkv/testing/expect_error.h"
#include "qkv/testing/files.h"
#include "qkv/testing/scratch_dir.h"

namespace qkv::data::testing {

using qkv::testing::read_file;
using qkv::testing::test_dir;
using qkv::testing::throws_with;
using qkv::testing::write_file;

// Writes `bytes` gzip-compressed (zlib's gzwrite), whatever the file name says.
std::filesystem::path write_gzip(const std::filesystem::path& path, std::string_view bytes);

}  // namespace qkv::data::testing
