#include "qkv/base/field_error.h"

namespace qkv {
namespace {

// A field name as the structs spell them: [a-z][a-z0-9_]*. Anything else in braces (a
// model's JSON config, a path) is text, not a mark.
bool is_field_name(std::string_view s) {
  if (s.empty() || s[0] < 'a' || s[0] > 'z') return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

std::string FieldMessage::render(
    const std::function<std::string(std::string_view field)>& name) const {
  const std::string_view text = text_;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find('{', i);
    if (open == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, open - i));
    const size_t close = text.find('}', open);
    const std::string_view inside = close == std::string_view::npos
                                        ? std::string_view()
                                        : text.substr(open + 1, close - open - 1);
    if (is_field_name(inside)) {
      out += name(inside);
      i = close + 1;
    } else {
      out += '{';
      i = open + 1;
    }
  }
  return out;
}

std::vector<std::string> FieldMessage::fields() const {
  std::vector<std::string> out;
  render([&](std::string_view f) {
    out.emplace_back(f);
    return std::string();
  });
  return out;
}

std::string plain_fields(std::string_view marked) {
  return FieldMessage(std::string(marked)).render([](std::string_view f) {
    return std::string(f);
  });
}

}  // namespace qkv
