// Its own process (src/base/CMakeLists.txt): keep_freed_memory_for_reuse() changes
// malloc for the whole process, which the other tests must not inherit.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>

#include "qkv/base/aligned.h"
#include "qkv/base/memory.h"

namespace qkv {
namespace {

int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_minflt);
}

// Minor page faults of allocating, touching and freeing `bytes` twice, counting the
// second round only (the first may grow the heap).
int64_t faults_of_second_round(std::size_t bytes) {
  for (int round = 0;; ++round) {
    const int64_t before = minor_faults();
    void* p = aligned_alloc_bytes(bytes);
    std::memset(p, round + 1, bytes);
    aligned_free(p);
    if (round == 1) return minor_faults() - before;
  }
}

TEST(MallocReuse, AFreedLargeBlockIsReusedWithoutPageFaults) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator ignores mallopt";
#endif
  constexpr std::size_t kBytes = std::size_t{64} << 20;  // above glibc's largest mmap threshold
  const int64_t pages = int64_t(kBytes / 4096);
  // glibc's defaults: the block is mmapped, unmapped by free, faulted in again.
  EXPECT_GT(faults_of_second_round(kBytes), pages / 2);
  ASSERT_TRUE(keep_freed_memory_for_reuse());
  EXPECT_LT(faults_of_second_round(kBytes), pages / 100);
}

}  // namespace
}  // namespace qkv
