// Private: the 13a tokenizer on text already checked to be valid UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace qkv::eval::detail {

// tokenize_13a() without the UTF-8 check (the corpus functions check every line once,
// naming its line number).
std::string tokenize_13a_unchecked(std::string_view line);

}  // namespace qkv::eval::detail
