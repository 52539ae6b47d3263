// Helpers for the data tests: files in a per-test temporary directory, gzip writing
// with zlib, and typed-exception checks on message fragments.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::data::testing {

// A fresh directory under gtest's TempDir, named after the running test.
std::filesystem::path test_dir();

// Writes `bytes` as they are.
std::filesystem::path write_file(const std::filesystem::path& path, std::string_view bytes);
// Writes `bytes` gzip-compressed (zlib's gzwrite), whatever the file name says.
std::filesystem::path write_gzip(const std::filesystem::path& path, std::string_view bytes);
std::string read_bytes(const std::filesystem::path& path);

// Success iff fn throws E (exactly that type or a subclass) whose message contains
// every fragment.
template <class E>
::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                       const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const std::string& f : fragments)
      if (what.find(f) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << f << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

}  // namespace qkv::data::testing
