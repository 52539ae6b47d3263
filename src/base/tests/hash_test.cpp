// fnv1a_64 against the published FNV-1a test vectors: a fingerprint stored in model files
// must never change between releases.
#include "qkv/base/hash.h"

#include <gtest/gtest.h>

namespace qkv {
namespace {

TEST(Hash, Fnv1a64MatchesThePublishedVectors) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
  // Bytes above 0x7f hash as unsigned: the same on every platform's char.
  EXPECT_NE(fnv1a_64("\xff"), fnv1a_64("\x7f"));
}

}  // namespace
}  // namespace qkv
