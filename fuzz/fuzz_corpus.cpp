// The corpus reader of src/data on the input bytes as files. The first byte picks the
// mode, the rest is the content:
//   bit 0  gzip-compress the content first (a valid stream around arbitrary text; raw
//          inputs starting with 1f 8b fuzz the gzip decoder on broken streams too)
//   bit 1  InvalidLines::Skip instead of Error
//   bit 2  max_line_bytes = 16 (exercises the too-long path without megabyte inputs)
//   bit 3  read_parallel_corpus over the two halves (split at the first 0xFF byte, or
//          the middle) instead of read_text_file
// Every line kept must pass find_line_issue, and the counts must add up.
#include <zlib.h>

#include <algorithm>
#include <string>

#include "fuzz_util.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/data/text_file.h"

namespace {

std::string gzip(std::string_view text) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::string out(deflateBound(&z, uLong(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void check_lines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines)
    if (qkv::data::find_line_issue(line).has_value())
      qkv::fuzz::invariant_failed("a kept line has an invalid byte");
}

void check_stats(const qkv::data::TextFileStats& s, size_t kept) {
  if (s.lines != s.kept + s.invalid + s.too_long || s.kept != int64_t(kept))
    qkv::fuzz::invariant_failed("text file counts do not add up");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qkv;
  if (size == 0) return 0;
  fuzz::silence_logs();
  const uint8_t mode = data[0];
  std::string_view content = fuzz::as_text(data + 1, size - 1);
  data::TextReadOptions options;
  if (mode & 2) options.invalid = data::InvalidLines::Skip;
  if (mode & 4) options.max_line_bytes = 16;
  auto stored = [&](std::string_view text) { return mode & 1 ? gzip(text) : std::string(text); };

  fuzz::expect_only_qkv_errors([&] {
    if (mode & 8) {
      size_t cut = content.find('\xff');
      if (cut == std::string_view::npos) cut = content.size() / 2;
      const std::string_view second = content.substr(std::min(cut + 1, content.size()));
      const auto src = fuzz::write_scratch("corpus.src", stored(content.substr(0, cut)));
      const auto tgt = fuzz::write_scratch("corpus.tgt", stored(second));
      const data::ParallelCorpus c = data::read_parallel_corpus(src, tgt, options);
      const data::CorpusStats& s = c.stats;
      if (c.source.size() != c.target.size() || c.source.size() != c.line_numbers.size() ||
          s.kept != int64_t(c.source.size()) || s.read != s.kept + s.skipped())
        fuzz::invariant_failed("parallel corpus counts do not add up");
      check_lines(c.source);
      check_lines(c.target);
    } else {
      const auto path = fuzz::write_scratch("corpus.txt", stored(content));
      const data::TextFile f = data::read_text_file(path, options);
      if (f.lines.size() != f.line_numbers.size())
        fuzz::invariant_failed("lines and line numbers differ in count");
      check_lines(f.lines);
      check_stats(f.stats, f.lines.size());
    }
  });
  return 0;
}
