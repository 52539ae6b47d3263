// Bounded reads of regular files: sizes are known (fstat) and checked before anything
// is allocated.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "detail/errno_text.h"
#include "detail/readable_file.h"
#include "qkv/base/error.h"
#include "qkv/io/atomic_file.h"

namespace qkv::io {
namespace detail {

ReadableFile::ReadableFile(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    QKV_THROW(IoError, "cannot open '", path.string(), "' for reading: ", errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    QKV_THROW(IoError, "cannot stat '", path.string(), "': ", errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    QKV_THROW(IoError, "cannot read '", path.string(), "': ",
              S_ISDIR(st.st_mode) ? "it is a directory, not a file" : "it is not a regular file");
  }
  size_ = std::uint64_t(st.st_size);
}

ReadableFile::~ReadableFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t ReadableFile::read_some(std::uint64_t offset, std::byte* dst, std::size_t size) const {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, dst + done, size - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      QKV_THROW(IoError, "reading '", path_.string(), "' at byte ", offset + done,
                " failed: ", errno_text(err));
    }
    if (n == 0) break;  // end of file
    done += std::size_t(n);
  }
  return done;
}

void ReadableFile::read_exactly(std::uint64_t offset, std::byte* dst, std::size_t size) const {
  const std::size_t got = read_some(offset, dst, size);
  QKV_CHECK(got == size, IoError, "'", path_.string(), "' ended at byte ", offset + got, " while ",
            offset + size, " bytes were expected (was it truncated while reading?)");
}

}  // namespace detail

std::vector<std::byte> read_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const detail::ReadableFile file(path);
  QKV_CHECK(file.size() <= max_bytes, IoError, "cannot read '", path.string(), "': it is ",
            file.size(), " bytes, more than the limit of ", max_bytes, " bytes");
  std::vector<std::byte> bytes(file.size());
  bytes.resize(file.read_some(0, bytes.data(), bytes.size()));
  // The file may have grown since fstat: read on, in bounded steps, up to the limit.
  std::byte probe[4096];
  while (true) {
    const std::uint64_t room = max_bytes - bytes.size();
    const std::size_t want = room >= sizeof probe ? sizeof probe : std::size_t(room) + 1;
    const std::size_t got = file.read_some(bytes.size(), probe, want);
    if (got == 0) break;
    QKV_CHECK(got <= room, IoError, "cannot read '", path.string(), "': it grew past the limit of ",
              max_bytes, " bytes while being read");
    bytes.insert(bytes.end(), probe, probe + got);
  }
  return bytes;
}

}  // namespace qkv::io
