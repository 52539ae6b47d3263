// Cache-line (64-byte) aligned allocation: every SIMD target's vectors start aligned,
// and no two tensors share a cache line.
#pragma once

#include <cstddef>
#include <memory>

namespace qkv {

inline constexpr std::size_t kAlignment = 64;

// Allocates `bytes` (rounded up to kAlignment). Throws ResourceError, naming the size,
// when the request exceeds memory_limit() (qkv/base/memory.h: physical memory, a cgroup
// limit or QKV_MEMORY_LIMIT) or the allocation fails,
// instead of letting the process be killed later. bytes == 0 returns nullptr.
void* aligned_alloc_bytes(std::size_t bytes);
void aligned_free(void* p) noexcept;

struct AlignedDeleter {
  void operator()(void* p) const noexcept { aligned_free(p); }
};

template <class T>
using AlignedArray = std::unique_ptr<T[], AlignedDeleter>;

// Uninitialised array of `count` trivially constructible T (checks count * sizeof(T)
// for overflow).
template <class T>
AlignedArray<T> make_aligned_array(std::size_t count);

// Physical memory of the machine in bytes (0 if unknown).
std::size_t physical_memory_bytes() noexcept;

namespace detail {
std::size_t checked_array_bytes(std::size_t count, std::size_t element_size);
}

template <class T>
AlignedArray<T> make_aligned_array(std::size_t count) {
  static_assert(std::is_trivially_default_constructible_v<T>);
  return AlignedArray<T>(
      static_cast<T*>(aligned_alloc_bytes(detail::checked_array_bytes(count, sizeof(T)))));
}

}  // namespace qkv
