// Directories for tests that write files: fresh for each test, unique per process (ctest
// runs test binaries in parallel), and gone afterwards so that a suite leaves nothing in
// the temporary directory.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::testing {

// A fresh, empty directory under gtest's TempDir(), named after the running test (when
// called inside one) and the process id; an earlier directory of that name is replaced.
// It stays after the test, for a look at what a failing test wrote.
std::filesystem::path test_dir();

// A fresh directory (mkdtemp under the system's temporary directory), removed with all it
// holds when this object goes out of scope, also when a test made parts of it unwritable.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix = "qkv_test");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Writes `bytes` to `name` inside the directory; returns its path as a string.
  std::string write(const std::string& name, std::string_view bytes) const;
  // The names of the entries directly inside, sorted.
  std::vector<std::string> entries() const;

 private:
  std::filesystem::path path_;
};

}  // namespace qkv::testing
