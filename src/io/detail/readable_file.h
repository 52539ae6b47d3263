// A regular file opened for reading, with its size known up front, so readers can
// validate lengths before allocating anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace qkv::io::detail {

class ReadableFile {
 public:
  // Throws IoError naming `path` if it is missing, unreadable, a directory or not a
  // regular file.
  explicit ReadableFile(const std::filesystem::path& path);
  ~ReadableFile();
  ReadableFile(const ReadableFile&) = delete;
  ReadableFile& operator=(const ReadableFile&) = delete;

  std::uint64_t size() const noexcept { return size_; }
  // Reads exactly `size` bytes at `offset` into `dst` (retrying short reads and EINTR).
  // Throws IoError if the file ends early (it shrank since it was opened) or read fails.
  void read_exactly(std::uint64_t offset, std::byte* dst, std::size_t size) const;
  // Reads up to `size` bytes at `offset`; returns how many (fewer only at end of file).
  std::size_t read_some(std::uint64_t offset, std::byte* dst, std::size_t size) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace qkv::io::detail
