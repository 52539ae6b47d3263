// Helpers for the io tests: byte-vector conversions; the scratch directory, file
// contents and typed-error assertions come from qkv_test_support.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/testing/expect_error.h"
#include "qkv/testing/files.h"
#include "qkv/testing/scratch_dir.h"

namespace qkv::io::test {

namespace fs = std::filesystem;

using qkv::testing::ScratchDir;
using qkv::testing::throws_exactly;

inline std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

inline std::string to_string(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace qkv::io::test
