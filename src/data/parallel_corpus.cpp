#include "qkv/data/parallel_corpus.h"

#include "qkv/base/error.h"
#include "qkv/base/log.h"

namespace qkv::data {
namespace {

// Reads what is left of `reader` to count its lines, for the mismatch message.
int64_t count_remaining(TextFileReader& reader, Line& line) {
  while (reader.next(line)) {
  }
  return reader.stats().lines;
}

void count_pair(Line& src, Line& tgt, ParallelCorpus& out) {
  CorpusStats& st = out.stats;
  ++st.read;
  if (src.status == LineStatus::TooLong || tgt.status == LineStatus::TooLong) {
    ++st.skipped_too_long;
  } else if (src.status == LineStatus::Invalid || tgt.status == LineStatus::Invalid) {
    ++st.skipped_invalid;
  } else if (is_blank(src.text) || is_blank(tgt.text)) {
    ++st.skipped_empty;
  } else {
    ++st.kept;
    out.source.push_back(std::move(src.text));
    out.target.push_back(std::move(tgt.text));
    out.line_numbers.push_back(src.number);
  }
}

}  // namespace

bool is_blank(std::string_view text) noexcept {
  return text.find_first_not_of(" \t") == std::string_view::npos;
}

std::string CorpusStats::describe() const {
  if (read == 0) return "read 0 pairs: the corpus is empty";
  std::string s = "read " + std::to_string(read) + " pairs, kept " + std::to_string(kept);
  if (skipped() == 0) return s + ", skipped none";
  s += ", skipped " + std::to_string(skipped()) + " (";
  std::string sep;
  auto part = [&](int64_t n, const std::string& why) {
    if (n == 0) return;
    s += sep + std::to_string(n) + " " + why;
    sep = ", ";
  };
  part(skipped_empty, "empty");
  part(skipped_invalid, "invalid UTF-8 or control characters");
  part(skipped_too_long, "over the line byte limit");
  part(skipped_max_length, "longer than " + std::to_string(max_length) + " tokens");
  return s + ")";
}

ParallelCorpus read_parallel_corpus(const std::filesystem::path& source,
                                    const std::filesystem::path& target,
                                    const TextReadOptions& options) {
  // The readers only classify lines; the policy is applied here, once both lines of a
  // pair are read, so a line count mismatch is reported as such even when the longer
  // file has invalid lines past the end of the shorter one.
  TextReadOptions classify = options;
  classify.invalid = InvalidLines::Skip;
  TextFileReader src(source, classify);
  TextFileReader tgt(target, classify);
  ParallelCorpus out;
  Line s, t;
  while (true) {
    const bool has_s = src.next(s);
    const bool has_t = tgt.next(t);
    if (!has_s && !has_t) break;
    if (has_s != has_t) {
      const int64_t ns = count_remaining(src, s);
      const int64_t nt = count_remaining(tgt, t);
      QKV_THROW(ValueError, "source ", source.string(), " has ", ns, " lines but target ",
                target.string(), " has ", nt,
                " lines; a parallel corpus needs one sentence per line, aligned line by line");
    }
    if (options.invalid == InvalidLines::Error) {
      QKV_CHECK(s.status != LineStatus::Invalid, ValueError, invalid_line_message(source, s));
      QKV_CHECK(t.status != LineStatus::Invalid, ValueError, invalid_line_message(target, t));
    }
    count_pair(s, t, out);
  }
  for (const TextFileReader* r : {&src, &tgt})
    if (r->stats().lines == 0) log(LogLevel::Warning, r->stats().describe(r->path()));
  if (out.stats.skipped() > 0)
    log(LogLevel::Warning, source.string(), " + ", target.string(), ": ", out.stats.describe());
  return out;
}

}  // namespace qkv::data
