// Lines from stdin or a stream under the corpus rules, and the pair readers of qkv score.
#include "qkv/data/stream_lines.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "qkv/base/error.h"
#include "qkv/testing/expect_error.h"
#include "qkv/testing/scratch_dir.h"

namespace qkv::data {
namespace {

namespace fs = std::filesystem;

std::vector<Line> read_lines(const std::string& text, int64_t max_bytes = 1 << 20) {
  std::istringstream in(text);
  StreamLineReader reader(in, max_bytes);
  std::vector<Line> out;
  Line line;
  while (reader.next(line)) out.push_back(line);
  return out;
}

TEST(StreamLineReader, SplitsLinesLikeTheCorpusReader) {
  const auto lines = read_lines(
      "\xEF\xBB\xBF"
      "a\r\nb\n\n  \nlast");
  ASSERT_EQ(lines.size(), 5u);
  const char* texts[] = {"a", "b", "", "  ", "last"};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].text, texts[i]);
    EXPECT_EQ(lines[i].number, int64_t(i + 1));
    EXPECT_EQ(lines[i].status, LineStatus::Ok);
  }
  EXPECT_EQ(line_problem(lines[2], 10), "empty line");
  EXPECT_EQ(line_problem(lines[3], 10), "empty line");
  EXPECT_EQ(line_problem(lines[0], 10), std::nullopt);
  EXPECT_TRUE(read_lines("").empty());
  EXPECT_EQ(read_lines("\n").size(), 1u);
  EXPECT_EQ(read_lines("x\n").size(), 1u);
}

TEST(StreamLineReader, FlagsInvalidAndOverlongLinesWithoutLosingTheirPlace) {
  const auto lines =
      read_lines("ok\nbad \xff byte\nabcdefghijklm\nabcdefghijkl\r\nctl\x01\nend\n", 12);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[1].status, LineStatus::Invalid);
  EXPECT_NE(lines[1].problem.find("invalid UTF-8 at byte 5"), std::string::npos)
      << lines[1].problem;
  EXPECT_TRUE(lines[1].text.empty());
  EXPECT_EQ(lines[2].status, LineStatus::TooLong);
  EXPECT_EQ(line_problem(lines[2], 12), "longer than 12 bytes");
  EXPECT_EQ(lines[3].status, LineStatus::Ok);  // 12 bytes once the '\r' is gone
  EXPECT_EQ(lines[3].text, "abcdefghijkl");
  EXPECT_EQ(lines[4].status, LineStatus::Invalid);
  EXPECT_NE(lines[4].problem.find("control character"), std::string::npos) << lines[4].problem;
  EXPECT_EQ(lines[5].text, "end");
  EXPECT_EQ(lines[5].number, 6);
}

TEST(StreamLineReader, LinesLongerThanItsBuffer) {
  const std::string big(200000, 'x');
  const auto lines = read_lines(big + "\n" + big + big + "\nz", 300000);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, big);
  EXPECT_EQ(lines[1].status, LineStatus::TooLong);
  EXPECT_EQ(lines[2].text, "z");
}

TEST(StreamLineReader, GzipDataIsAnErrorNotLinesOfGarbage) {
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
  EXPECT_EQ(read_lines("a\n\x1f\x8b\n")[1].status, LineStatus::Invalid);
}

// stdin redirected from a directory: every read fails with EISDIR, which std::cin alone
// would take for an empty input.
TEST(StreamLineReader, UnreadableStdinIsAnErrorNotAnEmptyInput) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("qkv_stdin_dir." + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_NE(std::freopen(dir.c_str(), "r", stdin), nullptr);
  std::cin.clear();
  Line line;
  StreamLineReader reader(std::cin);
  try {
    reader.next(line);
    ADD_FAILURE() << "no error reading a directory as stdin";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("reading stdin failed: Is a directory"), std::string::npos)
        << e.what();
  }
  ASSERT_NE(std::freopen("/dev/null", "r", stdin), nullptr);
  std::cin.clear();
  EXPECT_FALSE(StreamLineReader(std::cin).next(line));  // an empty stdin is fine
  fs::remove_all(dir);
}

// Every pair of `text`, and what the reader counted.
struct PairsRead {
  std::vector<LinePair> pairs;
  bool separator_seen = false;
  int64_t without_separator = 0;
};

PairsRead read_pairs(const std::string& text) {
  std::istringstream in(text);
  SeparatedPairReader reader(in, 12);
  PairsRead out;
  LinePair pair;
  while (reader.next(pair)) out.pairs.push_back(pair);
  out.separator_seen = reader.separator_seen();
  out.without_separator = reader.lines_without_separator();
  return out;
}

TEST(SeparatedPairReader, SplitsAtTheSeparatorAndTrimsBothSides) {
  const PairsRead read = read_pairs("a b ||| c\n\t x|||y \nnone\n\n|||\nabcdefghijklmn\n");
  const std::vector<LinePair>& pairs = read.pairs;
  ASSERT_EQ(pairs.size(), 6u);
  EXPECT_EQ(pairs[0].source, "a b");
  EXPECT_EQ(pairs[0].target, "c");
  EXPECT_EQ(pairs[1].source, "x");
  EXPECT_EQ(pairs[1].target, "y");
  EXPECT_FALSE(pairs[1].problem);
  EXPECT_EQ(pairs[2].problem, "no ' ||| ' between the source and the translation");
  EXPECT_EQ(pairs[3].problem, "empty line");  // blank: not counted as a wrong format
  EXPECT_FALSE(pairs[4].problem);             // both sides empty: the scorer decides
  EXPECT_EQ(pairs[4].source, "");
  EXPECT_EQ(pairs[5].problem, "longer than 12 bytes");
  EXPECT_EQ(pairs[5].number, 6);
  EXPECT_TRUE(read.separator_seen);
  EXPECT_EQ(read.without_separator, 1);
}

TEST(SeparatedPairReader, PlainTextHasNoSeparatorSeen) {
  const PairsRead read = read_pairs("one\ntwo\n");
  EXPECT_EQ(read.pairs.size(), 2u);
  EXPECT_FALSE(read.separator_seen);
  EXPECT_EQ(read.without_separator, 2);
}

TEST(ParallelLineReader, ReadsInLockstepAndNamesTheFileOfABadLine) {
  const testing::ScratchDir dir;
  const std::string src = dir.write("src.txt", "a\nb \xff\nc\n");
  const std::string tgt = dir.write("tgt.txt", "A\nB\nC\xff\n");
  ParallelLineReader reader(src, tgt);
  std::vector<LinePair> pairs;
  LinePair pair;
  while (reader.next(pair)) pairs.push_back(pair);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].source, "a");
  EXPECT_EQ(pairs[0].target, "A");
  EXPECT_FALSE(pairs[0].problem);
  ASSERT_TRUE(pairs[1].problem);
  EXPECT_EQ(pairs[1].problem->rfind(src + ": invalid UTF-8", 0), 0u) << *pairs[1].problem;
  ASSERT_TRUE(pairs[2].problem);
  EXPECT_EQ(pairs[2].problem->rfind(tgt + ": invalid UTF-8", 0), 0u) << *pairs[2].problem;
  EXPECT_EQ(pairs[2].number, 3);
}

TEST(ParallelLineReader, UnequalLengthsNameBothFilesAndWhereTheShorterEnds) {
  const testing::ScratchDir dir;
  const std::string src = dir.write("src.txt", "a\nb\nc\n");
  const std::string tgt = dir.write("tgt.txt", "A\n");
  ParallelLineReader reader(src, tgt);
  LinePair pair;
  ASSERT_TRUE(reader.next(pair));
  EXPECT_TRUE(testing::throws_with<ValueError>(
      [&] { reader.next(pair); },
      {src + " and " + tgt + " differ in length", tgt + " ends after 1 lines"}));
}

TEST(ReadAvailable, TakesBatchesUpToTheCountOrTheBytesAndAtLeastOneItem) {
  std::istringstream in("aaaa\nbb\nc\nddddddddd\ne\n");
  StreamLineReader reader(in);
  std::vector<Line> batch;
  EXPECT_EQ(read_available(reader, batch, 2, 1000), 8u);  // "aaaa\n" + "bb\n"
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[1].text, "bb");
  EXPECT_EQ(read_available(reader, batch, 100, 3), 12u);  // the cap is checked before a read
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].text, "c");
  EXPECT_EQ(batch[1].text, "ddddddddd");
  EXPECT_EQ(read_available(reader, batch, 100, 1000), 2u);
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_EQ(read_available(reader, batch, 100, 1000), 0u);  // the end
  EXPECT_TRUE(batch.empty());
}

}  // namespace
}  // namespace qkv::data
