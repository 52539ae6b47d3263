#include "hostile_corpora_util.h"

#include <zlib.h>

#include <fstream>
#include <map>
#include <stdexcept>

namespace qkv::hostile {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// The lines joined by '\n', each ended by one ("" for no lines).
std::string text_of(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// The first n partner lines (cycling when n > 12).
std::vector<std::string> target_lines(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(clean_target()[i % clean_target().size()]);
  return out;
}

// Writes partner, reads_as and clean for `c` (bad is written by the caller) and fills in
// the line count, which is reads_as's.
Corpus finish(const fs::path& dir, Corpus c, const std::vector<std::string>& reads_as,
              size_t partner_lines) {
  c.lines = int64_t(reads_as.size());
  write_bytes(dir / c.partner, text_of(target_lines(partner_lines)));
  write_bytes(dir / c.reads_as, text_of(reads_as));
  std::vector<std::string> clean = clean_source();
  clean.resize(std::min(partner_lines, clean.size()));
  write_bytes(dir / c.clean, text_of(clean));
  return c;
}

// The clean corpus with some lines replaced by `lines` (1-based line -> bytes). A valid
// replacement stays in reads_as (a command may still skip it); an invalid one is empty
// there.
Corpus replace_lines(const fs::path& dir, const std::map<int64_t, std::string>& lines,
                     std::string problem, bool valid) {
  std::vector<std::string> bad = clean_source(), reads = clean_source();
  Corpus c{.bad = "bad.txt", .problem = std::move(problem)};
  for (const auto& [number, bytes] : lines) {
    bad[size_t(number - 1)] = bytes;
    reads[size_t(number - 1)] = valid ? bytes : "";
    c.bad_lines.push_back(number);
  }
  write_bytes(dir / c.bad, text_of(bad));
  return finish(dir, c, reads, reads.size());
}

// The clean corpus as `bytes` (a whole-file transformation that must read back clean).
Corpus clean_as(const fs::path& dir, const std::string& name, const std::string& bytes) {
  Corpus c{.bad = name};
  write_bytes(dir / c.bad, bytes);
  return finish(dir, c, clean_source(), clean_source().size());
}

}  // namespace

const std::vector<std::string>& clean_source() {
  static const std::vector<std::string> lines = {"the red dog runs in the big park",
                                                 "a small cat sits on the blue ball",
                                                 "a man and a girl walk with the brown horse",
                                                 "the big dog sits in the park",
                                                 "a girl runs with the red ball",
                                                 "the man and the cat walk in the park",
                                                 "a small horse runs on the ball",
                                                 "the brown dog and the blue cat",
                                                 "a big man sits with a small girl",
                                                 "the girl walks the red horse",
                                                 "a cat runs in the big blue park",
                                                 "the man with the brown dog sits"};
  return lines;
}

const std::vector<std::string>& clean_target() {
  static const std::vector<std::string> lines = {
      "der rote hund lauft im grossen park",
      "eine kleine katze sitzt auf dem ball",
      "ein mann und ein madchen gehen mit dem braunen pferd",
      "der grosse hund sitzt im park",
      "ein madchen lauft mit dem roten ball",
      "der mann und die katze gehen im park",
      "ein kleines pferd lauft auf dem ball",
      "der braune hund und die blaue katze",
      "ein grosser mann sitzt mit einem kleinen madchen",
      "das madchen fuhrt das rote pferd",
      "eine katze lauft im grossen blauen park",
      "der mann mit dem braunen hund sitzt"};
  return lines;
}

std::string gzip(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&z, uLong(text.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

Corpus stray_continuation_byte(const fs::path& dir) {
  return replace_lines(dir, {{3, "the red \x80 dog runs"}, {8, "\xBF the brown dog"}},
                       "unexpected continuation byte 0x80", false);
}

Corpus overlong_encoding(const fs::path& dir) {
  // '/' as two and three bytes (the classic path-traversal disguise), 'A' as two.
  return replace_lines(dir, {{3, "a \xC0\xAF cat"}, {6, "\xE0\x80\xAF man"}, {9, "\xC1\x81 big"}},
                       "overlong encoding of U+002F", false);
}

Corpus truncated_sequence_at_line_end(const fs::path& dir) {
  return replace_lines(dir, {{3, "the dog caf\xC3"}, {7, "a horse \xF0\x9F\x98"}},
                       "truncated 2-byte sequence", false);
}

Corpus truncated_sequence_at_file_end(const fs::path& dir) {
  // The last line ends the file inside a 3-byte sequence, with no line break after it.
  std::vector<std::string> lines = clean_source();
  std::string bytes = text_of(lines);
  bytes.pop_back();
  bytes += " \xE2\x82";
  Corpus c{.bad = "bad.txt", .bad_lines = {12}, .problem = "truncated 3-byte sequence"};
  write_bytes(dir / c.bad, bytes);
  lines.back() = "";
  return finish(dir, c, lines, lines.size());
}

Corpus lone_surrogates(const fs::path& dir) {
  // U+D800, U+DFFF, and a CESU-8 pair (U+1F600 as two encoded surrogates).
  return replace_lines(
      dir, {{3, "a \xED\xA0\x80 cat"}, {5, "\xED\xBF\xBF"}, {9, "big \xED\xA0\xBD\xED\xB8\x80"}},
      "surrogate U+D800", false);
}

Corpus impossible_bytes(const fs::path& dir) {
  return replace_lines(
      dir, {{3, "the \xFF dog"}, {6, "\xF8\x88\x80\x80\x80 man"}, {10, "\xF4\x90\x80\x80 horse"}},
      "byte 0xFF never occurs in UTF-8", false);
}

Corpus utf16_file(const fs::path& dir) {
  // Windows' "Unicode" text: UTF-16LE with its byte order mark. Every '\n' is "\n\0", so
  // lines 2.. start with a NUL and a 13th line holds the last NUL.
  std::string bytes = "\xFF\xFE";
  for (const char ch : text_of(clean_source())) bytes += std::string{ch, '\0'};
  Corpus c{.bad = "bad.txt", .problem = "a UTF-16 byte order mark"};
  write_bytes(dir / c.bad, bytes);
  for (int64_t i = 1; i <= 13; ++i) c.bad_lines.push_back(i);
  return finish(dir, c, std::vector<std::string>(13), 13);
}

Corpus nul_bytes(const fs::path& dir) {
  return replace_lines(dir,
                       {{3, std::string("the red\0dog runs", 16)},
                        {11, std::string("a cat runs\0", 11)},
                        {12, std::string(1, '\0')}},
                       "control character U+0000 (NUL)", false);
}

Corpus control_characters(const fs::path& dir) {
  // A terminal colour escape, BEL, DEL, backspace and C1 NEL (U+0085).
  return replace_lines(dir,
                       {{3, "the \x1B[31mred\x1B[0m dog"},
                        {5, "a girl\x07 runs"},
                        {7, "a small\x7F horse"},
                        {9, "a big\x08 man"},
                        {11, "a cat\xC2\x85runs"}},
                       "control character U+001B (escape)", false);
}

Corpus crlf_mixed_with_lf(const fs::path& dir) {
  // Odd lines end in CRLF, even lines in LF; a CRLF ends the file.
  std::string bytes;
  for (size_t i = 0; i < clean_source().size(); ++i)
    bytes += clean_source()[i] + (i % 2 == 0 ? "\r\n" : "\n");
  bytes.back() = '\r';
  bytes += '\n';
  return clean_as(dir, "bad.txt", bytes);
}

Corpus lone_carriage_returns(const fs::path& dir) {
  // A CR inside a line (old Mac line end), and CR CR LF (a CRLF file converted twice).
  return replace_lines(dir, {{3, "the red\rdog runs"}, {6, "the man and the cat\r\r"}},
                       "control character U+000D (carriage return)", false);
}

Corpus byte_order_mark(const fs::path& dir) {
  return clean_as(dir, "bad.txt", "\xEF\xBB\xBF" + text_of(clean_source()));
}

Corpus whitespace_only_lines(const fs::path& dir) {
  return replace_lines(dir, {{3, "   "}, {5, "\t \t"}, {9, " \t "}}, "empty line", true);
}

Corpus empty_lines(const fs::path& dir) {
  return replace_lines(dir, {{4, ""}, {7, ""}}, "empty line", true);
}

Corpus unicode_space_only_lines(const fs::path& dir) {
  // NO-BREAK SPACE + IDEOGRAPHIC SPACE; EM SPACE + THIN SPACE: valid text that NFKC
  // turns into nothing.
  return replace_lines(dir, {{3, "\xC2\xA0\xE3\x80\x80"}, {5, "\xE2\x80\x83 \xE2\x80\x89"}},
                       "no subword tokens after normalisation", true);
}

Corpus line_over_one_mebibyte(const fs::path& dir) {
  std::string line;
  while (int64_t(line.size()) < kMiB) line += "red dog ";
  return replace_lines(dir, {{2, line + "x"}}, "longer than 1048576 bytes", false);
}

Corpus line_of_one_mebibyte(const fs::path& dir) {
  // Exactly at the reader's limit, so it is read; repetitive text is what made
  // SentencePiece's vocabulary trainer take minutes.
  std::string line;
  while (int64_t(line.size()) < kMiB) line += "red dog ";
  return replace_lines(dir, {{2, line}}, "", true);
}

Corpus no_final_newline(const fs::path& dir) {
  std::string bytes = text_of(clean_source());
  bytes.pop_back();
  return clean_as(dir, "bad.txt", bytes);
}

Corpus mismatched_line_counts(const fs::path& dir) {
  Corpus c{.bad = "bad.txt"};
  write_bytes(dir / c.bad, text_of(clean_source()));
  return finish(dir, c, clean_source(), clean_source().size() - 1);
}

Corpus empty_file(const fs::path& dir) {
  Corpus c{.bad = "bad.txt"};
  write_bytes(dir / c.bad, "");
  c = finish(dir, c, {}, 0);
  // Translations for an empty reference file to be held against.
  write_bytes(dir / c.clean, text_of(clean_source()));
  return c;
}

Corpus truncated_gzip(const fs::path& dir) {
  const std::string gz = gzip(text_of(clean_source()));
  return clean_as(dir, "bad.txt.gz", gz.substr(0, gz.size() / 2));
}

Corpus corrupt_gzip(const fs::path& dir) {
  std::string gz = gzip(text_of(clean_source()));
  gz[10] = char(gz[10] | 0x06);  // the first deflate block's type: 3, which is reserved
  return clean_as(dir, "bad.txt.gz", gz);
}

Corpus gzip_with_bad_checksum(const fs::path& dir) {
  // Every byte of text decodes; only the CRC-32 in the trailer is wrong.
  std::string gz = gzip(text_of(clean_source()));
  gz[gz.size() - 8] = char(gz[gz.size() - 8] ^ 0x55);
  return clean_as(dir, "bad.txt.gz", gz);
}

Corpus directory_as_file(const fs::path& dir) {
  Corpus c{.bad = "bad_dir"};
  fs::create_directories(dir / c.bad);
  write_bytes(dir / c.bad / "train.en", text_of(clean_source()));
  return finish(dir, c, clean_source(), clean_source().size());
}

Corpus missing_file(const fs::path& dir) {
  Corpus c{.bad = "missing.txt"};
  return finish(dir, c, clean_source(), clean_source().size());
}

}  // namespace qkv::hostile
