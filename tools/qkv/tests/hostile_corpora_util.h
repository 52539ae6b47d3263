// The generator of hostile corpora: one function per kind of bad input, each writing a
// small corpus into a directory, with what qkv must make of it. The sentences use the
// words of DecodeToolTest's vocabulary, so every clean line encodes to known pieces.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace qkv::hostile {

// One corpus of one kind, in a directory. Paths are file names in that directory.
struct Corpus {
  // The hostile input: a file, or a directory or a missing path for those kinds.
  std::string bad;
  // A clean target-side file, as many lines as `bad` should have (the pair's partner).
  std::string partner = "partner.txt";
  // `bad` as qkv must read it, line by line: BOM and CR line ends gone, a line with
  // invalid bytes left empty, valid lines that a command skips (blank, too long) kept.
  std::string reads_as = "reads_as.txt";
  // The clean source lines, as many as the partner's (EmptyFile: all 12): what eval holds
  // `bad` against, as translations or as references.
  std::string clean = "clean.txt";
  // Physical lines of `bad` (translate and score write one output line for each).
  int64_t lines = 0;
  // 1-based lines of `bad` that are skipped (or named in the error), in order.
  std::vector<int64_t> bad_lines;
  // What is wrong with the first bad line, as the messages say it.
  std::string problem;
};

// The 12 clean English lines every corpus starts from, and their German partners.
const std::vector<std::string>& clean_source();
const std::vector<std::string>& clean_target();

// Writes a corpus of one kind into `dir` (which exists).
using Generator = Corpus (*)(const std::filesystem::path& dir);

// Invalid UTF-8.
Corpus stray_continuation_byte(const std::filesystem::path& dir);
Corpus overlong_encoding(const std::filesystem::path& dir);
Corpus truncated_sequence_at_line_end(const std::filesystem::path& dir);
Corpus truncated_sequence_at_file_end(const std::filesystem::path& dir);
Corpus lone_surrogates(const std::filesystem::path& dir);
Corpus impossible_bytes(const std::filesystem::path& dir);
Corpus utf16_file(const std::filesystem::path& dir);
// Control characters and line ends.
Corpus nul_bytes(const std::filesystem::path& dir);
Corpus control_characters(const std::filesystem::path& dir);
Corpus crlf_mixed_with_lf(const std::filesystem::path& dir);
Corpus lone_carriage_returns(const std::filesystem::path& dir);
Corpus byte_order_mark(const std::filesystem::path& dir);
// Valid text that cannot be used.
Corpus whitespace_only_lines(const std::filesystem::path& dir);
Corpus empty_lines(const std::filesystem::path& dir);
Corpus unicode_space_only_lines(const std::filesystem::path& dir);
Corpus line_over_one_mebibyte(const std::filesystem::path& dir);
Corpus line_of_one_mebibyte(const std::filesystem::path& dir);
// File shapes.
Corpus no_final_newline(const std::filesystem::path& dir);
Corpus mismatched_line_counts(const std::filesystem::path& dir);
Corpus empty_file(const std::filesystem::path& dir);
Corpus truncated_gzip(const std::filesystem::path& dir);
Corpus corrupt_gzip(const std::filesystem::path& dir);
Corpus gzip_with_bad_checksum(const std::filesystem::path& dir);
Corpus directory_as_file(const std::filesystem::path& dir);
Corpus missing_file(const std::filesystem::path& dir);

// `text` gzip-compressed (zlib, default level), as `gzip` writes it.
std::string gzip(const std::string& text);

}  // namespace qkv::hostile
