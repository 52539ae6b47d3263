// Shared by the libFuzzer targets: a per-process scratch file for loaders that take a
// path, and the rule every target enforces. Only a typed qkv::Error may come out of a
// parser fed hostile bytes; anything else (another exception, a crash, a sanitizer
// report, a hang) is a finding that libFuzzer reports and saves as crash-*/timeout-*.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "qkv/base/error.h"
#include "qkv/base/log.h"

namespace qkv::fuzz {

inline std::span<const std::byte> as_bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own, removed at exit. Loaders that only take a path read
// the input from files written here. In memory (/dev/shm) where there is one: on ext4,
// rewriting a file in place flushes it to disk at close (auto_da_alloc), which held the
// file-based targets to ~250 executions per second (~1800 in /dev/shm).
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed, so the exit handler below can still use it.
  static const std::filesystem::path* const dir = [] {
    std::error_code ec;
    const bool shm =
        std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0;
    const std::filesystem::path base =
        shm ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
    auto* d = new std::filesystem::path(base / ("qkv-fuzz-" + std::to_string(::getpid())));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return d;
  }();
  return *dir;
}

// Writes `bytes` to scratch_dir()/name (replacing it) and returns the path.
inline std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = scratch_dir() / name;
  std::error_code ec;
  std::filesystem::remove(path, ec);  // a new file, not a truncated one (see above)
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) std::abort();  // the harness itself failed, not qkv
  return path;
}

// Runs fn(); a typed qkv::Error is the expected outcome for bad input and is swallowed
// (printed when QKV_FUZZ_VERBOSE is set, to see why a seed is rejected). Every other
// exception propagates out of LLVMFuzzerTestOneInput and terminates: a finding.
template <class Fn>
void expect_only_qkv_errors(Fn&& fn) {
  try {
    fn();
  } catch (const qkv::Error& e) {
    static const bool verbose = std::getenv("QKV_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "qkv::Error: %s\n", e.what());
  }
}

// A broken invariant on input the parser accepted: a finding (aborts with a message).
[[noreturn]] inline void invariant_failed(const char* what) {
  std::fprintf(stderr, "qkv fuzz: invariant broken: %s\n", what);
  std::abort();
}

// Quiet: skipped lines and empty files are logged as warnings, which would flood the
// fuzzer's output and slow it down.
inline void silence_logs() {
  set_log_level(LogLevel::Off);
}

}  // namespace qkv::fuzz
