// The corpus rule for a line: strict UTF-8 (base/utf8.h) and no control characters
// except tab, with a message naming the kind of error and the code point involved.
#include "qkv/base/utf8.h"

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

// Why the bytes at p[i] are not a well-formed sequence (utf8::sequence_length said 0).
std::string why_invalid(const unsigned char* p, size_t n, size_t i) {
  const unsigned char lead = p[i];
  // FF FE / FE FF opening a line is a UTF-16 byte order mark: say how to convert.
  if (i == 0 && n >= 2 && ((lead == 0xFF && p[1] == 0xFE) || (lead == 0xFE && p[1] == 0xFF)))
    return "a UTF-16 byte order mark: the text is UTF-16; convert it to UTF-8, e.g. with "
           "iconv -f UTF-16 -t UTF-8";
  if (is_continuation(lead)) return "unexpected continuation byte " + hex_byte(lead);
  if (lead >= 0xF8) return "byte " + hex_byte(lead) + " never occurs in UTF-8";
  const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  uint32_t cp = lead & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= n || !is_continuation(p[i + k]))
      return "truncated " + std::to_string(len) + "-byte sequence";
    cp = (cp << 6) | (p[i + k] & 0x3Fu);
  }
  const uint32_t min_cp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < min_cp) return "overlong encoding of " + hex_code_point(cp);
  if (cp >= 0xD800 && cp <= 0xDFFF) return "surrogate " + hex_code_point(cp);
  return "code point above U+10FFFF";
}

}  // namespace

// Validation is base/utf8.h's (one rule for every module); only a rejected sequence is
// taken apart again, to say what is wrong with it.
std::optional<LineIssue> find_line_issue(std::string_view line) {
  const auto* p = reinterpret_cast<const unsigned char*>(line.data());
  for (size_t i = 0; i < line.size();) {
    const auto byte = static_cast<int64_t>(i) + 1;
    const size_t len = utf8::sequence_length(line, i);
    if (len == 0) return utf8_issue(byte, why_invalid(p, line.size(), i));
    const uint32_t cp = utf8::code_point_at(line, i, len);
    if (is_control(cp)) return control_issue(byte, cp);
    i += len;
  }
  return std::nullopt;
}

}  // namespace qkv::data
