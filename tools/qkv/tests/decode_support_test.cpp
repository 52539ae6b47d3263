// The pieces of translate / score / attend below the command line: reading stdin lines
// under the corpus rules (word alignments are decode's: src/decode/tests/alignment_test.cpp).
#include "decode_support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "qkv/base/error.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

std::vector<data::Line> read_lines(const std::string& text, int64_t max_bytes = 1 << 20) {
  std::istringstream in(text);
  LineReader reader(in, max_bytes);
  std::vector<data::Line> out;
  data::Line line;
  while (reader.next(line)) out.push_back(line);
  return out;
}

TEST(LineReader, SplitsLinesLikeTheCorpusReader) {
  const auto lines = read_lines(
      "\xEF\xBB\xBF"
      "a\r\nb\n\n  \nlast");
  ASSERT_EQ(lines.size(), 5u);
  const char* texts[] = {"a", "b", "", "  ", "last"};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].text, texts[i]);
    EXPECT_EQ(lines[i].number, int64_t(i + 1));
    EXPECT_EQ(lines[i].status, data::LineStatus::Ok);
  }
  EXPECT_EQ(line_problem(lines[2], 10), "empty line");
  EXPECT_EQ(line_problem(lines[3], 10), "empty line");
  EXPECT_EQ(line_problem(lines[0], 10), std::nullopt);
  EXPECT_TRUE(read_lines("").empty());
  EXPECT_EQ(read_lines("\n").size(), 1u);
  EXPECT_EQ(read_lines("x\n").size(), 1u);
}

TEST(LineReader, FlagsInvalidAndOverlongLinesWithoutLosingTheirPlace) {
  const auto lines =
      read_lines("ok\nbad \xff byte\nabcdefghijklm\nabcdefghijkl\r\nctl\x01\nend\n", 12);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[1].status, data::LineStatus::Invalid);
  EXPECT_NE(lines[1].problem.find("invalid UTF-8 at byte 5"), std::string::npos)
      << lines[1].problem;
  EXPECT_TRUE(lines[1].text.empty());
  EXPECT_EQ(lines[2].status, data::LineStatus::TooLong);
  EXPECT_EQ(line_problem(lines[2], 12), "longer than 12 bytes");
  EXPECT_EQ(lines[3].status, data::LineStatus::Ok);  // 12 bytes once the '\r' is gone
  EXPECT_EQ(lines[3].text, "abcdefghijkl");
  EXPECT_EQ(lines[4].status, data::LineStatus::Invalid);
  EXPECT_NE(lines[4].problem.find("control character"), std::string::npos) << lines[4].problem;
  EXPECT_EQ(lines[5].text, "end");
  EXPECT_EQ(lines[5].number, 6);
}

TEST(LineReader, LinesLongerThanItsBuffer) {
  const std::string big(200000, 'x');
  const auto lines = read_lines(big + "\n" + big + big + "\nz", 300000);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, big);
  EXPECT_EQ(lines[1].status, data::LineStatus::TooLong);
  EXPECT_EQ(lines[2].text, "z");
}

TEST(LineReader, GzipDataIsAnErrorNotLinesOfGarbage) {
  const std::string gz("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+\xc9\n", 13);
  EXPECT_THROW(
      {
        try {
          read_lines(gz);
        } catch (const IoError& e) {
          EXPECT_NE(std::string(e.what()).find("gzip-compressed"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("zcat"), std::string::npos) << e.what();
          throw;
        }
      },
      IoError);
  // The magic bytes only count at the start of the input.
  EXPECT_EQ(read_lines("a\n\x1f\x8b\n")[1].status, data::LineStatus::Invalid);
}

// stdin redirected from a directory: every read fails with EISDIR, which std::cin alone
// would take for an empty input.
TEST(LineReader, UnreadableStdinIsAnErrorNotAnEmptyInput) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("qkv_stdin_dir." + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_NE(std::freopen(dir.c_str(), "r", stdin), nullptr);
  std::cin.clear();
  data::Line line;
  LineReader reader(std::cin);
  try {
    reader.next(line);
    ADD_FAILURE() << "no error reading a directory as stdin";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("reading stdin failed: Is a directory"), std::string::npos)
        << e.what();
  }
  ASSERT_NE(std::freopen("/dev/null", "r", stdin), nullptr);
  std::cin.clear();
  EXPECT_FALSE(LineReader(std::cin).next(line));  // an empty stdin is fine
  fs::remove_all(dir);
}

TEST(Fixed, FormatsWithoutLocale) {
  EXPECT_EQ(fixed(-1.2345678), "-1.234568");
  EXPECT_EQ(fixed(0.5, 2), "0.50");
  EXPECT_EQ(fixed(-std::numeric_limits<double>::infinity()), "-inf");
}

}  // namespace
}  // namespace qkv::tool
