#include "qkv/cli/field_names.h"

namespace qkv::cli {

std::string flag_for_field(std::string_view field) {
  std::string flag = "--" + std::string(field);
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string flag_message(const FieldMessage& e) {
  return e.render(flag_for_field);
}

std::string shell_quote(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                         "-_=./:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (const char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace qkv::cli
