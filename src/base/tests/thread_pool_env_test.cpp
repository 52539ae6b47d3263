// Run by CTest with QKV_NUM_THREADS=two in the environment (see src/base/CMakeLists.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"

namespace qkv {
namespace {

// The first use of the pool must name the malformed variable, and parallel work (which
// noexcept kernels rely on) must still run, serially.
TEST(ThreadPoolEnv, MalformedEnvironmentRaisesConfigError) {
  const char* env = std::getenv("QKV_NUM_THREADS");
  ASSERT_TRUE(env != nullptr && std::string(env) == "two") << "run with QKV_NUM_THREADS=two";
  try {
    num_threads();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("QKV_NUM_THREADS='two'"), std::string::npos) << e.what();
  }
  std::atomic<int> n{0};
  parallel_for(0, 10, 1, [&](int64_t, int64_t) { ++n; });
  EXPECT_EQ(n.load(), 10);
}

}  // namespace
}  // namespace qkv
