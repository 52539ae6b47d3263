// write_file_atomically: temporary file, fsync, rename, fsync of the directory.
// Why each step: without the file fsync a crash after the rename can leave a renamed
// but empty file (delayed allocation on ext4/xfs); without the directory fsync the
// rename itself may be lost; the temporary file lives in the target's directory because
// rename is only atomic within one filesystem.
#include "qkv/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "detail/errno_text.h"
#include "detail/syscalls.h"
#include "qkv/base/error.h"

namespace qkv::io {
namespace {

namespace fs = std::filesystem;

// Gathering small writes into 1 MiB keeps the syscall count low for many small tensors
// while large tensors bypass the copy.
constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

fs::path directory_of(const fs::path& path) {
  const fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// "<path>.tmp.<pid>.<n>": unique within the process by the counter and across processes
// by the pid, so concurrent saves never share a temporary file.
fs::path temporary_path_for(const fs::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  return fs::path(path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(counter.fetch_add(1)));
}

// fsync of a directory: some filesystems cannot (EINVAL, ENOTSUP), and then there is
// nothing more we can do; any other failure is reported.
int sync_directory(const fs::path& dir) {
  const int fd = detail::open_step(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = 0;
  if (detail::fsync_step(fd) != 0 && errno != EINVAL && errno != ENOTSUP) err = errno;
  ::close(fd);
  return err;
}

}  // namespace

namespace detail {

// The temporary file of one atomic write; removes it unless committed.
class AtomicFile {
 public:
  explicit AtomicFile(const fs::path& target) : target_(target), temp_(temporary_path_for(target)) {
    fd_ = open_step(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      const int err = errno;
      QKV_THROW(IoError, "cannot write '", target_.string(), "': cannot create temporary file '",
                temp_.string(), "' in directory '", directory_of(target_).string(),
                "': ", detail::errno_text(err),
                " (does the directory exist and is it writable?); the previous file (if any) is "
                "unchanged");
    }
  }
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Runs `fill` on a Writer over this file and flushes what it buffered.
  void write_with(FunctionRef<void(Writer&)> fill) {
    Writer writer(*this);
    fill(writer);
    writer.flush();
  }

  // Writes all of [data, data + size), retrying short writes and EINTR.
  void write_all(const std::byte* data, std::size_t size) {
    while (size > 0) {
      const ssize_t n = write_step(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("writing", n < 0 ? errno : EIO);
      data += n;
      size -= std::size_t(n);
      written_ += std::uint64_t(n);
    }
  }

  // fsync, close, rename over the target, fsync the directory.
  void commit() {
    if (fsync_step(fd_) != 0) fail("fsync of", errno);
    const int fd = std::exchange(fd_, -1);
    if (close_step(fd) != 0) fail("closing", errno);
    if (rename_step(temp_.c_str(), target_.c_str()) != 0) fail("renaming", errno);
    committed_ = true;
    const fs::path dir = directory_of(target_);
    if (const int err = sync_directory(dir); err != 0)
      QKV_THROW(IoError, "wrote '", target_.string(), "', but fsync of its directory '",
                dir.string(), "' failed: ", detail::errno_text(err),
                "; the new file is in place but may not survive a power loss");
  }

 private:
  [[noreturn]] void fail(const char* step, int err) const {
    QKV_THROW(IoError, "cannot write '", target_.string(), "': ", step, " temporary file '",
              temp_.string(), "' failed: ", detail::errno_text(err), " (", written_,
              " bytes written); the previous file (if any) is unchanged");
  }

  fs::path target_, temp_;
  int fd_ = -1;
  bool committed_ = false;
  std::uint64_t written_ = 0;
};

}  // namespace detail

Writer::Writer(detail::AtomicFile& file) : file_(file) {
  buffer_.reserve(kBufferBytes);
}

void Writer::write(std::span<const std::byte> bytes) {
  written_ += bytes.size();
  if (buffer_.size() + bytes.size() <= kBufferBytes) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return;
  }
  flush();
  if (bytes.size() >= kBufferBytes) {
    file_.write_all(bytes.data(), bytes.size());
  } else {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
}

void Writer::write(const void* data, std::size_t size) {
  write(std::span<const std::byte>(static_cast<const std::byte*>(data), size));
}

void Writer::flush() {
  file_.write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void write_file_atomically(const fs::path& path, FunctionRef<void(Writer&)> fill) {
  QKV_CHECK(!path.empty(), IoError, "cannot write a file with an empty path");
  detail::AtomicFile file(path);
  file.write_with(fill);
  file.commit();
}

void write_file_atomically(const fs::path& path, std::span<const std::byte> bytes) {
  write_file_atomically(path, [&](Writer& w) { w.write(bytes); });
}

int remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  fs::directory_iterator it(directory_of(target), ec), end;
  int removed = 0;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // "<pid>.<n>", both decimal, as temporary_path_for makes them.
    const std::string_view rest = std::string_view(name).substr(prefix.size());
    const std::size_t dot = rest.find('.');
    const auto digits = [](std::string_view s) {
      return !s.empty() && s.size() <= 18 &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string_view::npos || !digits(rest.substr(0, dot)) ||
        !digits(rest.substr(dot + 1)))
      continue;
    const long long pid = std::stoll(std::string(rest.substr(0, dot)));
    // kill(pid, 0) probes without signalling; EPERM means alive but not ours.
    const bool other_live_process = pid != ::getpid() && pid > 0 &&
                                    pid <= std::numeric_limits<pid_t>::max() &&
                                    (::kill(pid_t(pid), 0) == 0 || errno != ESRCH);
    if (other_live_process) continue;  // it may be saving right now
    std::error_code remove_ec;
    if (fs::remove(it->path(), remove_ec)) ++removed;
  }
  return removed;
}

}  // namespace qkv::io
