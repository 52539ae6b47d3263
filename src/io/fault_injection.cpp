// The step wrappers of detail/syscalls.h and the test hooks that steer them. The hooks
// are process-wide atomics rather than thread-locals: a save may run on another thread
// than the test that armed the hook.
#include "qkv/io/fault_injection.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "detail/syscalls.h"
#include "qkv/base/env.h"
#include "qkv/base/error.h"

namespace qkv::io {
namespace {

std::atomic<std::int64_t> g_steps{0};     // steps since the last FailNthWrite was armed
std::atomic<std::int64_t> g_fail_at{0};   // the step that fails; 0: none
std::atomic<std::size_t> g_max_write{0};  // cap per write(2); 0: none
std::atomic<std::uint64_t> g_write_calls{0};
std::atomic<std::int64_t> g_rename_delay_ms{0};  // pause before each rename; 0: none

// Counts a step and says whether it is the one to fail (errno is then ENOSPC).
bool inject_failure() {
  const std::int64_t step = g_steps.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::int64_t fail_at = g_fail_at.load(std::memory_order_relaxed);
  if (fail_at == 0 || step != fail_at) return false;
  errno = ENOSPC;
  return true;
}

}  // namespace

namespace detail {

int open_step(const char* path, int flags, mode_t mode) {
  if (inject_failure()) return -1;
  return ::open(path, flags, mode);
}

ssize_t write_step(int fd, const void* data, std::size_t size) {
  if (const std::size_t cap = g_max_write.load(std::memory_order_relaxed); cap != 0) {
    if (g_write_calls.fetch_add(1, std::memory_order_relaxed) % 2 == 1) {
      errno = EINTR;
      return -1;
    }
    if (size > cap) size = cap;
  }
  if (inject_failure()) return -1;
  return ::write(fd, data, size);
}

int fsync_step(int fd) {
  if (inject_failure()) return -1;
  return ::fsync(fd);
}

int close_step(int fd) {
  if (inject_failure()) {
    ::close(fd);  // the descriptor must not leak even when the step "fails"
    return -1;
  }
  return ::close(fd);
}

int rename_step(const char* from, const char* to) {
  if (const std::int64_t ms = g_rename_delay_ms.load(std::memory_order_relaxed); ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (inject_failure()) return -1;
  return std::rename(from, to);
}

}  // namespace detail

namespace testing {

FailNthWrite::FailNthWrite(std::int64_t n) : previous_fail_at_(g_fail_at.load()) {
  QKV_CHECK(n >= 1, ValueError, "FailNthWrite: step ", n, " must be >= 1");
  g_steps.store(0);
  g_fail_at.store(n);
}
FailNthWrite::~FailNthWrite() {
  g_fail_at.store(previous_fail_at_);
}
std::int64_t FailNthWrite::steps() const noexcept {
  return g_steps.load();
}
bool FailNthWrite::triggered() const noexcept {
  return g_steps.load() >= g_fail_at.load();
}

ShortWrites::ShortWrites(std::size_t max_bytes) : previous_max_(g_max_write.load()) {
  QKV_CHECK(max_bytes >= 1, ValueError, "ShortWrites: max_bytes must be >= 1");
  g_write_calls.store(0);
  g_max_write.store(max_bytes);
}
ShortWrites::~ShortWrites() {
  g_max_write.store(previous_max_);
}

// An hour at most: a longer pause is a mistake, not a test.
DelayBeforeRename::DelayBeforeRename(std::chrono::milliseconds delay)
    : previous_ms_(g_rename_delay_ms.load()) {
  QKV_CHECK(delay.count() >= 0 && delay.count() <= 3'600'000, ValueError,
            "DelayBeforeRename: ", delay.count(), " ms must be in [0, 3600000]");
  g_rename_delay_ms.store(delay.count());
}
DelayBeforeRename::~DelayBeforeRename() {
  g_rename_delay_ms.store(previous_ms_);
}

FaultsFromEnvironment::FaultsFromEnvironment() {
  if (const auto ms = env_int("QKV_TEST_SAVE_DELAY_MS", 0, 60'000))
    delay_.emplace(std::chrono::milliseconds(*ms));
  if (const auto n = env_int("QKV_TEST_FAIL_NTH_WRITE", 1, int64_t{1} << 40)) fail_.emplace(*n);
}

}  // namespace testing
}  // namespace qkv::io
