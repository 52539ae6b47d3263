// Strict UTF-8, the one decoder every module uses: well-formed sequences as the Unicode
// standard defines them (Unicode 15, table 3-7), so no overlong forms, no surrogates
// (U+D800..U+DFFF) and nothing above U+10FFFF. Corpora, model files, configs, BLEU input
// and heatmap labels all accept exactly the same bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qkv::utf8 {

// The length (1-4) of the well-formed sequence starting at s[i], or 0 when the bytes
// there are not one (a stray continuation byte, a truncated or overlong sequence, a
// surrogate, a code point above U+10FFFF, 0xC0, 0xC1, 0xF5..0xFF). i < s.size().
size_t sequence_length(std::string_view s, size_t i) noexcept;

// The offset of the first byte that does not start a well-formed sequence, or
// std::string_view::npos when all of `s` is valid.
size_t first_invalid(std::string_view s) noexcept;
inline bool is_valid(std::string_view s) noexcept {
  return first_invalid(s) == std::string_view::npos;
}

// The code point of the well-formed `length`-byte sequence at s[i] (sequence_length's
// result; not checked again).
char32_t code_point_at(std::string_view s, size_t i, size_t length) noexcept;

// The code points of `s`; each ill-formed sequence becomes U+FFFD (one per bad byte), so
// a caller that validated first gets the exact text and one that did not gets no crash.
std::u32string decode(std::string_view s);

// Appends the UTF-8 encoding of `c` (a surrogate or a value above U+10FFFF as U+FFFD).
void append(std::string& out, char32_t c);

}  // namespace qkv::utf8
