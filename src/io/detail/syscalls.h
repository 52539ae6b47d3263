// The POSIX calls behind write_file_atomically, each one a "step" that the test hooks
// of qkv/io/fault_injection.h can make fail. Same contracts as the calls they wrap
// (return -1 and set errno on failure).
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace qkv::io::detail {

int open_step(const char* path, int flags, mode_t mode);
ssize_t write_step(int fd, const void* data, std::size_t size);
int fsync_step(int fd);
int close_step(int fd);
int rename_step(const char* from, const char* to);

}  // namespace qkv::io::detail
