#include "detail/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "qkv/base/error.h"

namespace qkv::viz::detail {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* step, int err) {
  QKV_THROW(IoError, "cannot write '", path.string(), "': ", step, " failed: ", std::strerror(err));
}

// The temporary file: closed and removed on every early exit unless committed.
struct TempFile {
  std::string path;
  int fd = -1;
  bool committed = false;

  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed && !path.empty()) ::unlink(path.c_str());
  }
};

// Creates "<path>.tmp.<pid>.<n>" exclusively. pid + a process-wide counter keep threads and
// processes writing side by side apart; O_EXCL never reuses a stale file left by a crash.
void create(TempFile& tmp, const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0;; ++attempt) {
    const std::string name = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter.fetch_add(1));
    tmp.fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (tmp.fd >= 0) {
      tmp.path = name;
      return;
    }
    if (errno != EEXIST || attempt == 100) fail(path, "creating the temporary file", errno);
  }
}

}  // namespace

void replace_file(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  TempFile tmp;
  create(tmp, path);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(tmp.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, "write", errno);
    done += static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd) != 0) fail(path, "fsync", errno);
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail(path, "close", errno);
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) fail(path, "rename", errno);
  tmp.committed = true;
}

}  // namespace qkv::viz::detail
