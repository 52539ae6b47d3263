#include "io_test_util.h"
#include "qkv/io/atomic_file.h"

namespace qkv::io {
namespace {

using test::ScratchDir;
using test::throws_exactly;

TEST(ReadFile, ReadsTheWholeFileUpToTheLimit) {
  ScratchDir dir;
  ::qkv::testing::write_file(dir / "f", "abcdef");
  EXPECT_EQ(test::to_string(read_file(dir / "f", 6)), "abcdef");
  EXPECT_EQ(test::to_string(read_file(dir / "f", 1000)), "abcdef");
  ::qkv::testing::write_file(dir / "empty", "");
  EXPECT_TRUE(read_file(dir / "empty", 0).empty());
}

TEST(ReadFile, MissingFileRaisesIoErrorNamingIt) {
  ScratchDir dir;
  const auto path = dir / "absent.txt";
  EXPECT_TRUE(throws_exactly<IoError>([&] { read_file(path, 100); },
                                      {"'" + path.string() + "'", "No such file or directory"}));
}

TEST(ReadFile, DirectoryRaisesIoError) {
  ScratchDir dir;
  EXPECT_TRUE(throws_exactly<IoError>([&] { read_file(dir.path(), 100); },
                                      {"'" + dir.path().string() + "'", "is a directory"}));
}

TEST(ReadFile, FileOverTheLimitRaisesIoErrorBeforeReading) {
  ScratchDir dir;
  ::qkv::testing::write_file(dir / "f", "abcdef");
  EXPECT_TRUE(throws_exactly<IoError>(
      [&] { read_file(dir / "f", 5); },
      {"'" + (dir / "f").string() + "'", "it is 6 bytes", "limit of 5 bytes"}));
}

}  // namespace
}  // namespace qkv::io
