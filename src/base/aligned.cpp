#include "qkv/base/aligned.h"

#include <unistd.h>

#include <cstdlib>

#include "qkv/base/error.h"
#include "qkv/base/memory.h"

namespace qkv {

std::size_t physical_memory_bytes() noexcept {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

namespace detail {
std::size_t checked_array_bytes(std::size_t count, std::size_t element_size) {
  QKV_CHECK(element_size == 0 || count <= SIZE_MAX / element_size, ResourceError, "allocation of ",
            count, " elements of ", element_size, " bytes overflows size_t");
  return count * element_size;
}
}  // namespace detail

void* aligned_alloc_bytes(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  // Refused up front rather than left to the OOM killer; memory_limit() is the physical
  // memory, lowered by a container's cgroup limit or QKV_MEMORY_LIMIT.
  const MemoryLimit& limit = memory_limit();
  QKV_CHECK(limit.bytes == 0 || bytes <= limit.bytes, ResourceError, "cannot allocate ",
            format_bytes(double(bytes)), ": qkv may use ", format_bytes(double(limit.bytes)), " (",
            limit.source, "; reduce the batch or model size)");
  QKV_CHECK(bytes <= SIZE_MAX - kAlignment, ResourceError, "allocation of ", bytes,
            " bytes is too large");
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  QKV_CHECK(p != nullptr, ResourceError, "out of memory allocating ", rounded / (1024.0 * 1024.0),
            " MiB");
  return p;
}

void aligned_free(void* p) noexcept {
  std::free(p);
}

}  // namespace qkv
