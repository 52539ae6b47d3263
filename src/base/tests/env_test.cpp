#include "qkv/base/env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "qkv/base/error.h"

namespace qkv {
namespace {

TEST(EnvInt, UnsetIsNoneAndAnIntegerInRangeIsItsValue) {
  ::unsetenv("QKV_ENV_TEST");
  EXPECT_EQ(env_int("QKV_ENV_TEST", 0, 10), std::nullopt);
  ::setenv("QKV_ENV_TEST", "7", 1);
  EXPECT_EQ(env_int("QKV_ENV_TEST", 0, 10), 7);
  ::unsetenv("QKV_ENV_TEST");
}

TEST(EnvInt, AnythingElseIsAnErrorNamingTheVariable) {
  for (const char* bad : {"", "x", "7x", " 7", "11", "-1", "99999999999999999999"}) {
    ::setenv("QKV_ENV_TEST", bad, 1);
    try {
      env_int("QKV_ENV_TEST", 0, 10);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), "environment variable QKV_ENV_TEST='" + std::string(bad) +
                                           "' must be an integer in [0, 10]");
    }
  }
  ::unsetenv("QKV_ENV_TEST");
}

}  // namespace
}  // namespace qkv
