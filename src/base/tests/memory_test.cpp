// Memory sizes, the limit qkv plans for, and the estimate check's message.
#include "qkv/base/memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "qkv/base/aligned.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv {
namespace {

TEST(MemorySize, ParsesBytesAndBinaryUnits) {
  EXPECT_EQ(parse_memory_size("1073741824", "x"), uint64_t{1} << 30);
  EXPECT_EQ(parse_memory_size("512M", "x"), uint64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("512MiB", "x"), uint64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("1.5G", "x"), uint64_t{3} << 29);
  EXPECT_EQ(parse_memory_size("2t", "x"), uint64_t{2} << 40);
  EXPECT_EQ(parse_memory_size("64k", "x"), uint64_t{64} << 10);
}

TEST(MemorySize, RejectsAnythingElseNamingTheVariable) {
  for (const char* bad : {"", "G", "-1G", "0", "0.1", "1e9", "12X", "1.5GB2", "nan", "9E"}) {
    try {
      parse_memory_size(bad, "QKV_MEMORY_LIMIT");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("QKV_MEMORY_LIMIT='" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(MemorySize, FormatsInBinaryUnits) {
  EXPECT_EQ(format_bytes(812), "812 B");
  EXPECT_EQ(format_bytes(3 * 1024.0), "3.0 KiB");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
  EXPECT_EQ(format_bytes(16 * std::ldexp(1.0, 40)), "16.0 TiB");
}

TEST(MemoryLimit, IsAtMostThePhysicalMemory) {
  const MemoryLimit& limit = memory_limit();
  ASSERT_GT(limit.bytes, 0u);
  EXPECT_LE(limit.bytes, physical_memory_bytes());
  EXPECT_FALSE(limit.source.empty());
}

TEST(MemoryLimit, AnEstimateAboveItIsAResourceErrorNamingTheRemedy) {
  EXPECT_NO_THROW(check_memory(1024, "a small buffer", "reduce nothing"));
  try {
    check_memory(std::ldexp(1.0, 80), "the model", "reduce {dim_emb}");
    FAIL() << "no error";
  } catch (const FieldResourceError& e) {  // a ResourceError whose remedy names fields
    const std::string what = e.what();
    EXPECT_NE(what.find("the model needs about 1.0 YiB"), std::string::npos) << what;
    EXPECT_NE(what.find("qkv may use"), std::string::npos) << what;
    EXPECT_NE(what.find("; reduce dim_emb"), std::string::npos) << what;
    EXPECT_NE(e.marked_text().find("; reduce {dim_emb}"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace qkv
