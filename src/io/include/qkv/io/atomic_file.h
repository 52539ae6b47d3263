// Whole-file writes that either fully happen or leave the previous file as it was, and
// bounded whole-file reads. Checkpoints and models go through here: a crash, a full disk
// or a kill in the middle of a save must never cost the last good file.
//
// The protocol (POSIX): write a temporary file in the same directory (so the rename
// stays within one filesystem), fsync it, rename it over the target (atomic), then fsync
// the directory so the rename itself survives a power loss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "qkv/base/function_ref.h"

namespace qkv::io {

namespace detail {
class AtomicFile;
}

// Appends bytes to the temporary file of write_file_atomically. Buffered: small writes
// are gathered, large ones go straight to the file. Throws IoError naming the target
// file and the system's reason when a write fails.
class Writer {
 public:
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(const void* data, std::size_t size);
  // Bytes handed to write() so far.
  std::uint64_t bytes_written() const noexcept { return written_; }

 private:
  friend class detail::AtomicFile;
  explicit Writer(detail::AtomicFile& file);
  void flush();

  detail::AtomicFile& file_;
  std::vector<std::byte> buffer_;
  std::uint64_t written_ = 0;
};

// Replaces `path` with what `fill` writes, atomically: afterwards `path` holds either
// its previous content (or does not exist, if it did not) or the complete new content,
// never a mix, even if the process dies at any point.
//
// Steps: create "<path>.tmp.<pid>.<n>" next to `path` (exclusive, mode 0666 & ~umask),
// run `fill`, flush, fsync, close, rename over `path`, fsync the directory.
// On failure before the rename (including an exception thrown by `fill`) the temporary
// file is removed, `path` is untouched, and IoError names `path`, the failing step and
// strerror (exceptions from `fill` propagate unchanged). If only the final directory
// fsync fails, `path` already holds the new content; IoError says so, because the
// rename may not be durable yet and the caller should not delete older copies.
// A symlink at `path` is replaced by the new file, not followed. The new file gets mode
// 0666 & ~umask, not the previous file's mode.
void write_file_atomically(const std::filesystem::path& path, FunctionRef<void(Writer&)> fill);
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);

// Removes the temporary files of write_file_atomically(`target`) that a killed process
// left behind ("<target>.tmp.<pid>.<n>" whose process no longer exists, or is this one:
// call it only while this process is not saving `target`). A process killed mid-save
// cannot clean up, and each leftover is as large as the file. Returns how many were
// removed; one that cannot be removed is skipped (it costs space, nothing else).
int remove_stale_temporaries(const std::filesystem::path& target);

// The whole content of the regular file at `path`. Throws IoError naming `path` when it
// is missing, unreadable, a directory, or larger than `max_bytes` (checked before
// anything is allocated, and again while reading in case the file grows).
std::vector<std::byte> read_file(const std::filesystem::path& path, std::uint64_t max_bytes);

}  // namespace qkv::io
