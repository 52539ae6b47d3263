#include "qkv/data/parallel_corpus.h"

#include <gtest/gtest.h>

#include "data_test_util.h"
#include "qkv/base/error.h"

namespace qkv::data {
namespace {

using testing::test_dir;
using testing::throws_with;
using testing::write_file;
using testing::write_gzip;

void expect_consistent(const CorpusStats& s) {
  EXPECT_EQ(s.read, s.kept + s.skipped()) << s.describe();
}

TEST(ParallelCorpus, ReadsAlignedPairsFromGzipAndPlain) {
  const auto dir = test_dir();
  const auto src = write_gzip(dir / "train.en.gz", "A man.\nTwo dogs.\n");
  const auto tgt = write_file(dir / "train.de", "Ein Mann.\r\nZwei Hunde.\r\n");
  const ParallelCorpus c = read_parallel_corpus(src, tgt);
  EXPECT_EQ(c.source, (std::vector<std::string>{"A man.", "Two dogs."}));
  EXPECT_EQ(c.target, (std::vector<std::string>{"Ein Mann.", "Zwei Hunde."}));
  EXPECT_EQ(c.line_numbers, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.stats.read, 2);
  EXPECT_EQ(c.stats.kept, 2);
  EXPECT_EQ(c.stats.describe(), "read 2 pairs, kept 2, skipped none");
}

TEST(ParallelCorpus, DifferentLineCountsNameBothFilesAndBothCounts) {
  const auto dir = test_dir();
  const auto three = write_file(dir / "three.en", "a\nb\nc\n");
  const auto five = write_gzip(dir / "five.de.gz", "a\nb\nc\nd\ne");
  EXPECT_TRUE(
      throws_with<ValueError>([&] { read_parallel_corpus(three, five); },
                              {three.string() + " has 3 lines", five.string() + " has 5 lines"}));
  EXPECT_TRUE(
      throws_with<ValueError>([&] { read_parallel_corpus(five, three); },
                              {five.string() + " has 5 lines", three.string() + " has 3 lines"}));
  const auto empty = write_file(dir / "empty.de", "");
  EXPECT_TRUE(throws_with<ValueError>([&] { read_parallel_corpus(three, empty); },
                                      {"has 3 lines", empty.string() + " has 0 lines"}));
}

TEST(ParallelCorpus, MismatchIsReportedEvenWhenTheLongerFileHasInvalidLinesLater) {
  const auto dir = test_dir();
  const auto src = write_file(dir / "s", "a\n");
  const auto tgt = write_file(dir / "t", "a\nb\xFF\nc\n");
  EXPECT_TRUE(throws_with<ValueError>([&] { read_parallel_corpus(src, tgt); },
                                      {"has 1 lines", "has 3 lines"}));
}

TEST(ParallelCorpus, BlankLinesOnEitherSideAreSkippedAndCounted) {
  const auto dir = test_dir();
  const auto src = write_file(dir / "s", "one\n\ntwo\nthree\n \t \nfour\n");
  const auto tgt = write_file(dir / "t", "eins\nzwei?\n  \ndrei\nvier?\nvier\n");
  const ParallelCorpus c = read_parallel_corpus(src, tgt);
  EXPECT_EQ(c.source, (std::vector<std::string>{"one", "three", "four"}));
  EXPECT_EQ(c.target, (std::vector<std::string>{"eins", "drei", "vier"}));
  EXPECT_EQ(c.line_numbers, (std::vector<int64_t>{1, 4, 6}));
  EXPECT_EQ(c.stats.skipped_empty, 3);
  EXPECT_EQ(c.stats.kept, 3);
  EXPECT_NE(c.stats.describe().find("skipped 3 (3 empty)"), std::string::npos)
      << c.stats.describe();
  expect_consistent(c.stats);
}

TEST(ParallelCorpus, InvalidLineIsAnErrorNamingItsFileAndLine) {
  const auto dir = test_dir();
  const auto src = write_file(dir / "s", "a\nb\nc\n");
  const auto tgt = write_file(dir / "t", "a\nb\nc\xC0\x80\n");
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { read_parallel_corpus(src, tgt); },
      {tgt.string() + ":3: invalid UTF-8 at byte 2", "overlong", "--skip-invalid"}));
}

TEST(ParallelCorpus, SkipPolicyDropsThePairAndCountsEachReasonOnce) {
  const auto dir = test_dir();
  const std::string long_line(64, 'x');
  // 1 ok, 2 invalid src, 3 invalid tgt + blank src (counted as invalid), 4 too long tgt
  // with invalid src (counted as too long), 5 blank tgt, 6 ok.
  const auto src = write_file(dir / "s", "a\nb\xFF\n\n\x01\nc\nd\n");
  const auto tgt = write_gzip(dir / "t.gz", "A\nB\nC\xED\xA0\x80\n" + long_line + "\n\nD\n");
  const ParallelCorpus c =
      read_parallel_corpus(src, tgt, {.invalid = InvalidLines::Skip, .max_line_bytes = 32});
  EXPECT_EQ(c.source, (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(c.line_numbers, (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(c.stats.read, 6);
  EXPECT_EQ(c.stats.skipped_invalid, 2);
  EXPECT_EQ(c.stats.skipped_too_long, 1);
  EXPECT_EQ(c.stats.skipped_empty, 1);
  expect_consistent(c.stats);
  const std::string d = c.stats.describe();
  for (const char* part : {"read 6 pairs", "kept 2", "skipped 4", "1 empty",
                           "2 invalid UTF-8 or control characters", "1 over the line byte limit"})
    EXPECT_NE(d.find(part), std::string::npos) << d;
}

TEST(ParallelCorpus, TwoEmptyFilesGiveAnEmptyCorpusThatSaysSo) {
  const auto dir = test_dir();
  const ParallelCorpus c =
      read_parallel_corpus(write_file(dir / "s", ""), write_gzip(dir / "t.gz", ""));
  EXPECT_TRUE(c.source.empty());
  EXPECT_EQ(c.stats.read, 0);
  EXPECT_NE(c.stats.describe().find("empty"), std::string::npos);
}

TEST(ParallelCorpus, MissingFileIsAnIoErrorNamingIt) {
  const auto dir = test_dir();
  const auto src = write_file(dir / "s", "a\n");
  EXPECT_TRUE(
      throws_with<IoError>([&] { read_parallel_corpus(src, dir / "t"); }, {(dir / "t").string()}));
  EXPECT_TRUE(
      throws_with<IoError>([&] { read_parallel_corpus(dir, src); }, {dir.string(), "directory"}));
}

TEST(ParallelCorpus, DescribeNamesTheMaxLengthSkips) {
  CorpusStats s{.read = 10, .kept = 8, .skipped_max_length = 2, .max_length = 50};
  EXPECT_EQ(s.describe(), "read 10 pairs, kept 8, skipped 2 (2 longer than 50 tokens)");
}

}  // namespace
}  // namespace qkv::data
