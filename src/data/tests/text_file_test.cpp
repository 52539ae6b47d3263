#include "qkv/data/text_file.h"

#include <gtest/gtest.h>

#include "data_test_util.h"
#include "qkv/base/error.h"

namespace qkv::data {
namespace {

using testing::read_file;
using testing::test_dir;
using testing::throws_with;
using testing::write_file;
using testing::write_gzip;

const std::string kText = "Two young men.\nA dog runs — über den Platz.\n\tTabbed\nlast line";
const std::vector<std::string> kLines = {"Two young men.", "A dog runs — über den Platz.",
                                         "\tTabbed", "last line"};

TEST(TextFile, PlainAndGzipGiveTheSameLines) {
  const auto dir = test_dir();
  const TextFile plain = read_text_file(write_file(dir / "a.txt", kText));
  const TextFile gz = read_text_file(write_gzip(dir / "a.txt.gz", kText));
  EXPECT_EQ(plain.lines, kLines);
  EXPECT_EQ(gz.lines, kLines);
  EXPECT_EQ(plain.line_numbers, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(gz.line_numbers, plain.line_numbers);
  EXPECT_FALSE(plain.stats.gzip);
  EXPECT_TRUE(gz.stats.gzip);
}

TEST(TextFile, GzipIsDetectedByMagicBytesNotByName) {
  const auto dir = test_dir();
  const TextFile gz_named_txt = read_text_file(write_gzip(dir / "corpus.txt", kText));
  const TextFile plain_named_gz = read_text_file(write_file(dir / "corpus.gz", kText));
  EXPECT_TRUE(gz_named_txt.stats.gzip);
  EXPECT_FALSE(plain_named_gz.stats.gzip);
  EXPECT_EQ(gz_named_txt.lines, kLines);
  EXPECT_EQ(plain_named_gz.lines, kLines);
}

TEST(TextFile, ConcatenatedGzipMembersAreOneFile) {
  const auto dir = test_dir();
  const std::string a = read_file(write_gzip(dir / "a.gz", "one\ntwo\n"));
  const std::string b = read_file(write_gzip(dir / "b.gz", "three\n"));
  const TextFile f = read_text_file(write_file(dir / "ab.gz", a + b));
  EXPECT_EQ(f.lines, (std::vector<std::string>{"one", "two", "three"}));
}

struct BadBytes {
  const char* name;
  std::string bytes;  // placed after "ok " on line 2, so the error is at byte 4
  const char* fragment;
};

class InvalidUtf8 : public ::testing::TestWithParam<BadBytes> {};

TEST_P(InvalidUtf8, IsAnErrorNamingFileLineAndByte) {
  const auto path = write_file(test_dir() / "bad.txt", "fine\nok " + GetParam().bytes + "\n");
  EXPECT_TRUE(throws_with<ValueError>([&] { read_text_file(path); },
                                      {path.string() + ":2: ", "at byte 4", GetParam().fragment,
                                       "fix the file or pass --skip-invalid"}));
}

TEST_P(InvalidUtf8, IsSkippedAndCountedUnderSkip) {
  const auto path = write_file(test_dir() / "bad.txt", "fine\nok " + GetParam().bytes + "\nend\n");
  const TextFile f = read_text_file(path, {.invalid = InvalidLines::Skip});
  EXPECT_EQ(f.lines, (std::vector<std::string>{"fine", "end"}));
  EXPECT_EQ(f.line_numbers, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(f.stats.lines, 3);
  EXPECT_EQ(f.stats.invalid, 1);
  EXPECT_EQ(f.stats.kept, 2);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, InvalidUtf8,
    ::testing::Values(BadBytes{"Overlong2", "\xC0\xAF", "overlong encoding of U+002F"},
                      BadBytes{"Overlong2C1", "\xC1\xBF", "overlong encoding of U+007F"},
                      BadBytes{"Overlong3", "\xE0\x80\xAF", "overlong encoding of U+002F"},
                      BadBytes{"Overlong4", "\xF0\x80\x80\xAF", "overlong encoding of U+002F"},
                      BadBytes{"SurrogateLow", "\xED\xA0\x80", "surrogate U+D800"},
                      BadBytes{"SurrogateHigh", "\xED\xBF\xBF", "surrogate U+DFFF"},
                      BadBytes{"AboveMaxF4", "\xF4\x90\x80\x80", "above U+10FFFF"},
                      BadBytes{"AboveMaxF7", "\xF7\xBF\xBF\xBF", "above U+10FFFF"},
                      BadBytes{"TruncatedAtEnd", "\xE2\x82", "truncated 3-byte sequence"},
                      BadBytes{"TruncatedBeforeAscii", "\xF0\x9F\x98x",
                               "truncated 4-byte sequence"},
                      BadBytes{"TruncatedBeforeLead", "\xC3\xC3\xA4", "truncated 2-byte sequence"},
                      BadBytes{"LoneContinuation", "\x80", "unexpected continuation byte 0x80"},
                      BadBytes{"ByteFF", "\xFF", "byte 0xFF never occurs"},
                      BadBytes{"ByteF8", "\xF8\x88\x80\x80\x80", "byte 0xF8 never occurs"},
                      BadBytes{"Nul", std::string("\0x", 2), "control character U+0000 (NUL)"},
                      BadBytes{"Escape", "\x1B[31m", "control character U+001B"},
                      BadBytes{"Del", "\x7F", "control character U+007F"},
                      BadBytes{"CarriageReturnInside", "\rb", "control character U+000D"},
                      BadBytes{"C1Next", "\xC2\x85", "control character U+0085"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(TextFile, ValidEdgesOfUtf8AreAccepted) {
  const std::vector<std::string> valid = {
      "\xC2\xA0",          // U+00A0, first after the C1 controls
      "\xDF\xBF",          // U+07FF, last 2-byte
      "\xE0\xA0\x80",      // U+0800, first 3-byte
      "\xED\x9F\xBF",      // U+D7FF, just below the surrogates
      "\xEE\x80\x80",      // U+E000, just above them
      "\xEF\xBF\xBF",      // U+FFFF
      "\xF0\x90\x80\x80",  // U+10000, first 4-byte
      "\xF4\x8F\xBF\xBF",  // U+10FFFF, the last code point
      "a\tb",              // tab is allowed
      "x\xEF\xBB\xBFy",    // U+FEFF inside a line is text, not a BOM
  };
  for (const std::string& s : valid) EXPECT_EQ(find_line_issue(s), std::nullopt) << s;
}

TEST(TextFile, IssueBytePositionIsOneBased) {
  const auto issue = find_line_issue("ab\xFF");
  ASSERT_TRUE(issue.has_value());
  EXPECT_EQ(issue->byte, 3);
  EXPECT_EQ(find_line_issue("\xC3\xA4\xC3\xA4\xED\xA0\x80")->byte, 5);
}

TEST(TextFile, Utf16TextIsAnErrorThatSaysHowToConvertIt) {
  const auto dir = test_dir();
  // "hi\n" in UTF-16LE and UTF-16BE, each with its byte order mark.
  for (const std::string& bytes :
       {std::string("\xFF\xFEh\0i\0\n\0", 8), std::string("\xFE\xFF\0h\0i\0\n", 8)}) {
    const auto path = write_file(dir / "utf16.txt", bytes);
    EXPECT_TRUE(throws_with<ValueError>(
        [&] { read_text_file(path); },
        {path.string() + ":1: invalid UTF-8 at byte 1 (a UTF-16 byte order mark", "iconv"}));
  }
  // The same bytes later in a line are no byte order mark.
  EXPECT_EQ(find_line_issue("a\xFF\xFE")->what,
            "invalid UTF-8 at byte 2 (byte 0xFF never occurs in UTF-8)");
}

TEST(TextFile, BomIsStrippedOnlyAtTheStartOfTheFile) {
  const auto dir = test_dir();
  const std::string bom = "\xEF\xBB\xBF";
  const TextFile f = read_text_file(write_gzip(dir / "bom.gz", bom + "first\n" + bom + "second\n"));
  EXPECT_EQ(f.lines, (std::vector<std::string>{"first", bom + "second"}));
}

TEST(TextFile, CrlfLineEndsAreStripped) {
  const TextFile f = read_text_file(write_file(test_dir() / "crlf.txt", "a b\r\nc\r\n\r\nd\r"));
  EXPECT_EQ(f.lines, (std::vector<std::string>{"a b", "c", "", "d"}));
  EXPECT_EQ(f.stats.invalid, 0);
}

TEST(TextFile, EmptyFileHasNoLinesAndSaysSo) {
  const auto dir = test_dir();
  for (const auto& path : {write_file(dir / "empty.txt", ""), write_gzip(dir / "empty.gz", "")}) {
    const TextFile f = read_text_file(path);
    EXPECT_TRUE(f.lines.empty());
    EXPECT_EQ(f.stats.lines, 0);
    EXPECT_NE(f.stats.describe(path).find("is empty"), std::string::npos);
  }
}

TEST(TextFile, LineOverOneMebibyteIsSkippedAndCounted) {
  const auto dir = test_dir();
  const std::string limit(size_t{1} << 20, 'a');
  const std::string text = "short\n" + limit + "b\n" + limit + "\r\nend";
  for (const auto& path : {write_file(dir / "long.txt", text), write_gzip(dir / "long.gz", text)}) {
    const TextFile f = read_text_file(path);
    ASSERT_EQ(f.lines.size(), 3u) << path;
    EXPECT_EQ(f.lines[0], "short");
    EXPECT_EQ(f.lines[1], limit);  // exactly at the limit (the CR does not count)
    EXPECT_EQ(f.lines[2], "end");
    EXPECT_EQ(f.line_numbers, (std::vector<int64_t>{1, 3, 4}));
    EXPECT_EQ(f.stats.too_long, 1);
    EXPECT_EQ(f.stats.lines, 4);
  }
}

TEST(TextFile, LineLimitIsConfigurableAndInvalidBytesInLongLinesCountAsTooLong) {
  const auto path = write_file(test_dir() / "l.txt", "12345\n123456\n1234567\xFF\n");
  const TextFile f = read_text_file(path, {.max_line_bytes = 5});
  EXPECT_EQ(f.lines, (std::vector<std::string>{"12345"}));
  EXPECT_EQ(f.stats.too_long, 2);
  EXPECT_EQ(f.stats.invalid, 0);
  EXPECT_TRUE(throws_with<ConfigError>([&] { TextFileReader r(path, {.max_line_bytes = 0}); },
                                       {"max line bytes"}));
}

TEST(TextFile, ReaderReportsEveryLineWithItsStatus) {
  const auto path = write_file(test_dir() / "s.txt", "ok\nb\xFF\n1234567890\n");
  TextFileReader reader(path, {.invalid = InvalidLines::Skip, .max_line_bytes = 8});
  Line line;
  std::vector<LineStatus> statuses;
  while (reader.next(line)) statuses.push_back(line.status);
  EXPECT_EQ(statuses,
            (std::vector<LineStatus>{LineStatus::Ok, LineStatus::Invalid, LineStatus::TooLong}));
  EXPECT_EQ(reader.stats().lines, 3);
}

TEST(TextFile, TruncatedGzipIsAnIoErrorNamingTheFile) {
  const auto dir = test_dir();
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "sentence number " + std::to_string(i) + "\n";
  const std::string gz = read_file(write_gzip(dir / "full.gz", text));
  for (size_t keep : {gz.size() / 2, gz.size() - 4, size_t{12}}) {
    const auto path = write_file(dir / ("cut" + std::to_string(keep) + ".gz"), gz.substr(0, keep));
    EXPECT_TRUE(throws_with<IoError>([&] { read_text_file(path); }, {path.string(), "truncated"}))
        << keep;
  }
}

TEST(TextFile, CorruptGzipIsAnIoErrorNamingTheFile) {
  const auto dir = test_dir();
  std::string gz = read_file(write_gzip(dir / "full.gz", "some text\nmore text\n"));
  gz[gz.size() - 8] ^= 0x55;  // the CRC-32 in the trailer
  const auto path = write_file(dir / "crc.gz", gz);
  EXPECT_TRUE(throws_with<IoError>([&] { read_text_file(path); }, {path.string(), "corrupt"}));
}

TEST(TextFile, DirectoryOrMissingFileIsAnIoErrorNamingIt) {
  const auto dir = test_dir();
  EXPECT_TRUE(throws_with<IoError>([&] { read_text_file(dir); }, {dir.string(), "directory"}));
  const auto missing = dir / "nope.txt";
  EXPECT_TRUE(
      throws_with<IoError>([&] { read_text_file(missing); }, {missing.string(), "No such file"}));
}

}  // namespace
}  // namespace qkv::data
