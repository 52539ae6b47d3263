#include "qkv/cli/field_names.h"

namespace qkv::cli {
namespace {

// Fields set by a flag of another name: the library's structs name what they hold
// (a model directory), the flags keep Marian's names (--model).
constexpr std::pair<std::string_view, std::string_view> kFlagNamedOtherwise[] = {
    {"model_dir", "--model"},
};

}  // namespace

std::string flag_for_field(std::string_view field) {
  for (const auto& [name, flag] : kFlagNamedOtherwise)
    if (name == field) return std::string(flag);
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
