// Test-only hooks that make qkv::io's low-level file steps misbehave on purpose, so
// tests can prove that a failed save keeps the previous file intact and that partial
// writes and EINTR are handled. They affect the whole process while alive (the steps of
// a save may run on any thread); use one guard of each kind at a time, from tests only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace qkv::io::testing {

// While alive, the n-th (1-based, counted from construction) low-level step of
// write_file_atomically fails with errno ENOSPC. Steps are, in order: creating the
// temporary file, each write(2) call, fsync of the file, close, rename, opening the
// directory, fsync of the directory. Loop n = 1, 2, ... until a save succeeds to fail
// every step once.
class FailNthWrite {
 public:
  explicit FailNthWrite(std::int64_t n);
  ~FailNthWrite();
  FailNthWrite(const FailNthWrite&) = delete;
  FailNthWrite& operator=(const FailNthWrite&) = delete;

  // Steps taken since construction; true once step n was reached (and failed).
  std::int64_t steps() const noexcept;
  bool triggered() const noexcept;

 private:
  std::int64_t previous_fail_at_;
};

// While alive, every write(2) of qkv::io writes at most `max_bytes` bytes, and every
// other call is interrupted before writing anything (returns -1 with errno EINTR), the
// way a signal or a pipe would cut writes short.
class ShortWrites {
 public:
  explicit ShortWrites(std::size_t max_bytes);
  ~ShortWrites();
  ShortWrites(const ShortWrites&) = delete;
  ShortWrites& operator=(const ShortWrites&) = delete;

 private:
  std::size_t previous_max_;
};

// While alive, every write_file_atomically sleeps `delay` once its temporary file is
// complete (written, fsync'ed, closed) and before renaming it over the target. Test-only:
// it widens the window in which a kill leaves the finished temporary file next to the
// previous target, so a kill test can land kills inside a save (`qkv train` arms it from
// QKV_TEST_SAVE_DELAY_MS for tests/reliability/kill_test.sh). Changes no file content.
class DelayBeforeRename {
 public:
  explicit DelayBeforeRename(std::chrono::milliseconds delay);
  ~DelayBeforeRename();
  DelayBeforeRename(const DelayBeforeRename&) = delete;
  DelayBeforeRename& operator=(const DelayBeforeRename&) = delete;

 private:
  std::int64_t previous_ms_;
};

// The hooks a process arms from its environment for the reliability tests
// (tests/reliability/*.sh run `qkv train` with them); none while the variables are unset.
// QKV_TEST_SAVE_DELAY_MS=N (0..60000) arms DelayBeforeRename(N ms);
// QKV_TEST_FAIL_NTH_WRITE=N (>= 1) arms FailNthWrite(N), counted from construction. A
// variable set to anything else is a ConfigError naming it (env_int).
class FaultsFromEnvironment {
 public:
  FaultsFromEnvironment();

 private:
  std::optional<DelayBeforeRename> delay_;
  std::optional<FailNthWrite> fail_;
};

}  // namespace qkv::io::testing
