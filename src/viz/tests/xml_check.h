// A small XML well-formedness checker for the renderers' output: balanced, properly
// nested tags, quoted attributes without '<', and only valid entity references in text
// and attribute values. In HTML mode it also accepts a <!DOCTYPE> and skips the raw text
// of <script> and <style>, as an HTML parser does.
#pragma once

#include <string>
#include <string_view>

namespace qkv::viz::testing {

// "" when `doc` is well-formed, else what is wrong and at which byte.
std::string xml_errors(std::string_view doc, bool html = false);

// Non-overlapping occurrences of `needle` in `haystack`.
size_t count(std::string_view haystack, std::string_view needle);

}  // namespace qkv::viz::testing
