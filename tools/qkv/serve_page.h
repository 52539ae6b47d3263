// The web page of `qkv serve` (serve_page.html), embedded at build time
// (cmake/EmbedFile.cmake writes serve_page.cpp from it).
#pragma once

#include <string_view>

namespace qkv::tool {

std::string_view serve_page();

}  // namespace qkv::tool
