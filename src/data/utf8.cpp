// Strict UTF-8 validation following the Unicode standard's table of well-formed byte
// sequences (Unicode 15, Table 3-7), plus the corpus rule "no control characters
// except tab". Decoding is done in full (not only by the lead byte's range) so the
// message can name the kind of error and the code point involved.
#include <cstdio>

#include "qkv/data/text_file.h"

namespace qkv::data {
namespace {

std::string hex_code_point(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

bool is_continuation(unsigned char b) {
  return (b & 0xC0) == 0x80;
}

const char* control_name(uint32_t cp) {
  switch (cp) {
    case 0x00:
      return " (NUL)";
    case 0x0D:
      return " (carriage return)";
    case 0x1B:
      return " (escape)";
    case 0x7F:
      return " (DEL)";
    default:
      return "";
  }
}

bool is_control(uint32_t cp) {
  return (cp < 0x20 && cp != '\t') || (cp >= 0x7F && cp <= 0x9F);
}

LineIssue utf8_issue(int64_t byte, const std::string& why) {
  return {byte, "invalid UTF-8 at byte " + std::to_string(byte) + " (" + why + ")"};
}

LineIssue control_issue(int64_t byte, uint32_t cp) {
  return {byte, "control character " + hex_code_point(cp) + control_name(cp) + " at byte " +
                    std::to_string(byte)};
}

}  // namespace

std::optional<LineIssue> find_line_issue(std::string_view line) {
  const auto* p = reinterpret_cast<const unsigned char*>(line.data());
  const size_t n = line.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char lead = p[i];
    const auto byte = static_cast<int64_t>(i) + 1;
    if (lead < 0x80) {
      if (is_control(lead)) return control_issue(byte, lead);
      ++i;
      continue;
    }
    // FF FE / FE FF opening a line is a UTF-16 byte order mark: say how to convert.
    if (i == 0 && n >= 2 && ((lead == 0xFF && p[1] == 0xFE) || (lead == 0xFE && p[1] == 0xFF)))
      return utf8_issue(byte,
                        "a UTF-16 byte order mark: the text is UTF-16; convert it to UTF-8, "
                        "e.g. with iconv -f UTF-16 -t UTF-8");
    if (is_continuation(lead))
      return utf8_issue(byte, "unexpected continuation byte " + hex_byte(lead));
    if (lead >= 0xF8) return utf8_issue(byte, "byte " + hex_byte(lead) + " never occurs in UTF-8");
    const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    uint32_t cp = lead & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= n || !is_continuation(p[i + k]))
        return utf8_issue(byte, "truncated " + std::to_string(len) + "-byte sequence");
      cp = (cp << 6) | (p[i + k] & 0x3Fu);
    }
    const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min_cp) return utf8_issue(byte, "overlong encoding of " + hex_code_point(cp));
    if (cp >= 0xD800 && cp <= 0xDFFF) return utf8_issue(byte, "surrogate " + hex_code_point(cp));
    if (cp > 0x10FFFF) return utf8_issue(byte, "code point above U+10FFFF");
    if (is_control(cp)) return control_issue(byte, cp);
    i += len;
  }
  return std::nullopt;
}

}  // namespace qkv::data
