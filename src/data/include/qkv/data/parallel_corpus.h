// Parallel corpora: a source file and a target file whose line i are translations of
// each other. Both are read in lockstep so that dropping a line drops the pair, and
// every dropped pair is counted by reason (CorpusStats), for the CLI to report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "qkv/data/text_file.h"

namespace qkv::data {

// What happened to every line pair, from reading to batching. A pair is counted once,
// under the first reason that applies in this order: too_long, invalid, empty,
// max_length. read == kept + skipped_*.
struct CorpusStats {
  int64_t read = 0;                // line pairs read
  int64_t kept = 0;                // pairs used
  int64_t skipped_empty = 0;       // empty (only whitespace) on either side
  int64_t skipped_invalid = 0;     // invalid UTF-8 / control characters (InvalidLines::Skip)
  int64_t skipped_too_long = 0;    // a line over max_line_bytes on either side
  int64_t skipped_max_length = 0;  // more than max_length tokens on a side (batcher)
  int64_t max_length = 0;          // the limit behind skipped_max_length (0: not applied)

  int64_t skipped() const noexcept {
    return skipped_empty + skipped_invalid + skipped_too_long + skipped_max_length;
  }
  // One line: "read 29000 pairs, kept 28990, skipped 10 (4 empty, 3 invalid UTF-8 or
  // control characters, 2 over the line byte limit, 1 longer than 100 tokens)".
  std::string describe() const;
};

struct ParallelCorpus {
  std::vector<std::string> source;    // [N]
  std::vector<std::string> target;    // [N]
  std::vector<int64_t> line_numbers;  // [N] 1-based line of each pair in both files
  CorpusStats stats;
};

// Reads both files (plain or gzip each). Throws ValueError naming both files and
// both line counts when the counts differ, ValueError naming FILE:LINE for an invalid
// line under InvalidLines::Error, IoError for unreadable files. Empty files are allowed
// (0 pairs) and logged as a warning, as is any skipped pair.
ParallelCorpus read_parallel_corpus(const std::filesystem::path& source,
                                    const std::filesystem::path& target,
                                    const TextReadOptions& options = {});

// True when `text` holds only spaces and tabs (or nothing).
bool is_blank(std::string_view text) noexcept;

}  // namespace qkv::data
