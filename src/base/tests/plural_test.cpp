#include "qkv/base/plural.h"

#include <gtest/gtest.h>

namespace qkv {
namespace {

TEST(Plural, OneIsSingularEverythingElsePlural) {
  EXPECT_EQ(count_of(1, "sentence"), "1 sentence");
  EXPECT_EQ(count_of(0, "sentence"), "0 sentences");
  EXPECT_EQ(count_of(2, "line"), "2 lines");
  EXPECT_EQ(count_of(-1, "update"), "-1 updates");
  EXPECT_EQ(count_of(1, "child", "children"), "1 child");
  EXPECT_EQ(count_of(3, "child", "children"), "3 children");
}

}  // namespace
}  // namespace qkv
