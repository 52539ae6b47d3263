// UTF-8 validation for safetensors headers, tensor names and metadata (the format and
// Python require valid UTF-8; JSON libraries disagree on what to do otherwise).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace qkv::io::detail {

// Offset of the first byte that does not start a well-formed UTF-8 sequence
// (Unicode 15, table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF),
// or nullopt when all of `text` is valid.
std::optional<std::size_t> first_invalid_utf8(std::string_view text) noexcept;

}  // namespace qkv::io::detail
