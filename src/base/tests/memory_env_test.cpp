// Run by CTest with QKV_MEMORY_LIMIT=64M in the environment (see src/base/CMakeLists.txt):
// the variable lowers the limit, and every aligned allocation above it is refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "qkv/base/aligned.h"
#include "qkv/base/error.h"
#include "qkv/base/memory.h"

namespace qkv {
namespace {

TEST(MemoryEnv, QKV_MEMORY_LIMITCapsEstimatesAndAllocations) {
  const char* env = std::getenv("QKV_MEMORY_LIMIT");
  ASSERT_TRUE(env != nullptr && std::string(env) == "64M") << "run with QKV_MEMORY_LIMIT=64M";
  EXPECT_EQ(memory_limit().bytes, uint64_t{64} << 20);
  EXPECT_EQ(memory_limit().source, "QKV_MEMORY_LIMIT");
  auto fits = make_aligned_array<float>(size_t{1} << 20);  // 4 MiB
  EXPECT_NE(fits.get(), nullptr);
  try {
    make_aligned_array<float>(size_t{32} << 20);  // 128 MiB
    FAIL() << "no error";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot allocate 128.0 MiB: qkv may use 64.0 MiB "
                                         "(QKV_MEMORY_LIMIT"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(check_memory(65.0 * 1024 * 1024, "x", "y"), ResourceError);
}

}  // namespace
}  // namespace qkv
