// Private: UTF-8 and whitespace as Python's str sees them. sacreBLEU runs on Python str,
// so "whitespace" means str.isspace() (NBSP, U+2003, U+3000, ... included) and a
// "character" is a code point, not a byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::eval::detail {

// Throws ValueError "<what> is not valid UTF-8 (byte N)" when s is not valid UTF-8 (strict,
// as Python's decoder and base/utf8.h: no overlong forms, surrogates or code points above
// U+10FFFF).
void check_utf8(std::string_view s, std::string_view what);

// Length in bytes of the code point starting at s[i] (s valid UTF-8).
inline size_t code_point_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Python's str.isspace() for the code point starting at s[i] (s valid UTF-8); sets *len
// to the code point's length in bytes.
bool is_space_at(std::string_view s, size_t i, size_t* len);

// Python's str.split() without arguments: the runs between Unicode whitespace.
std::vector<std::string_view> split_whitespace(std::string_view s);

// Python's str.rstrip(): s without trailing Unicode whitespace.
std::string_view rstrip_whitespace(std::string_view s);

// ' '.join(s.split()): runs of Unicode whitespace become one ASCII space, none at the ends.
std::string normalize_whitespace(std::string_view s);

}  // namespace qkv::eval::detail
