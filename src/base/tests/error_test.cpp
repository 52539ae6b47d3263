#include "qkv/base/error.h"

#include <gtest/gtest.h>

namespace qkv {
namespace {

void check_positive(int x) {
  QKV_CHECK(x > 0, ValueError, "x must be positive, got ", x);
}

TEST(Error, CheckThrowsTypedErrorWithMessageAndLocation) {
  try {
    check_positive(-3);
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "x must be positive, got -3");
    EXPECT_NE(e.where().find("error_test.cpp:"), std::string::npos) << e.where();
  }
}

TEST(Error, CheckPassesSilently) {
  EXPECT_NO_THROW(check_positive(1));
}

TEST(Error, EveryKindIsAnError) {
  EXPECT_THROW(QKV_THROW(ShapeError, "s"), Error);
  EXPECT_THROW(QKV_THROW(IoError, "i"), Error);
  EXPECT_THROW(QKV_THROW(ConfigError, "c"), Error);
  EXPECT_THROW(QKV_THROW(IndexError, "x"), Error);
  EXPECT_THROW(QKV_THROW(ResourceError, "r"), Error);
  EXPECT_THROW(QKV_THROW(InternalError, "n"), Error);
}

#if !defined(NDEBUG) || defined(QKV_ENABLE_DCHECK)
TEST(ErrorDeathTest, DcheckAbortsWithCondition) {
  EXPECT_DEATH(QKV_DCHECK(1 + 1 == 3), "internal check failed: 1 \\+ 1 == 3");
}
#endif

}  // namespace
}  // namespace qkv
