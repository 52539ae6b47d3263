// How much memory qkv may plan for, and the check that turns an estimate above it into a
// clean ResourceError instead of a process the kernel's OOM killer ends half-way.
//
// Large buffers are estimated before they are allocated (a model's parameters and Adam
// moments, a training batch's activations, beam search's rows): the estimate is compared
// with memory_limit(), and the error names what to reduce.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qkv {

struct MemoryLimit {
  std::uint64_t bytes = 0;  // 0: unknown (no check is made)
  // What set it: "physical memory", "the cgroup memory limit" or "QKV_MEMORY_LIMIT".
  std::string source;
};

// The smallest of the machine's physical memory, the memory limit of the cgroup the
// process runs in (a container's limit: v2 memory.max or v1 memory.limit_in_bytes) and
// the environment variable QKV_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix: "512M",
// "1.5G"; a user's cap, and what the tests use to make limits hittable). Read once, at
// the first call. ConfigError naming the variable when QKV_MEMORY_LIMIT is malformed.
const MemoryLimit& memory_limit();

// "1073741824", "512M", "1.5G", "2T" (binary units, optional trailing "B" or "iB") ->
// bytes, at least 1. ConfigError naming `what` otherwise.
std::uint64_t parse_memory_size(std::string_view text, std::string_view what);

// "812 B", "3.0 KiB", "1.5 GiB", "16.0 TiB".
std::string format_bytes(double bytes);

// Throws FieldResourceError (a ResourceError, qkv/base/field_error.h) when `bytes` (an
// estimate, in double so that absurd sizes do not overflow) exceeds memory_limit():
//   "<what> needs about X GiB, more than the Y GiB qkv may use (<source>); <remedy>"
// `remedy` says which sizes to reduce, marking option fields as {field} for each front
// end to name ("reduce {mini_batch_words}" reads "reduce --mini-batch-words" in the CLI).
// `what` is plain text.
void check_memory(double bytes, std::string_view what, std::string_view remedy);

// Tells glibc's malloc to keep freed memory for reuse: no mmap for large blocks (which
// free() unmaps, so the next one is faulted in again, zeroed page by page) and no heap
// trimming below 2 GiB of free top. For a process that repeats the same allocations,
// e.g. a training loop: measured on the Transformer benchmark (bench/README.md), 180,000
// minor page faults per update with glibc's defaults, 0 with this. Freed memory then
// stays with the process (peak RSS is unchanged: it is what the step needs at once).
// Process-wide, so only programs call it (the qkv tool, the benchmarks), never the
// library on its own. Returns false when malloc refused a setting.
bool keep_freed_memory_for_reuse() noexcept;

}  // namespace qkv
