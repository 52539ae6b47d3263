// --help: two columns (flag and metavar | help), the help wrapped at word boundaries.
#include <algorithm>
#include <sstream>

#include "detail/values.h"
#include "qkv/base/error.h"

namespace qkv::cli {

namespace {

// A space that wrap() does not break at; printed as a space.
constexpr char kNoBreak = '\x1f';

// Greedy word wrap of `text` into lines of at most `width` characters (a longer word
// gets a line of its own).
std::vector<std::string> wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::istringstream words{std::string(text)};
  std::string word, line;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  for (std::string& l : lines) std::replace(l.begin(), l.end(), kNoBreak, ' ');
  return lines;
}

std::string left_column(const Option& o) {
  std::string s = o.short_name() ? std::string("  -") + o.short_name() + ", " : "      ";
  s += "--" + o.name();
  const std::string metavar = o.display_metavar();
  if (!metavar.empty()) s += " " + metavar;
  return s;
}

// "(one of: a, b; range [1, 9]; default: 3)", "(required)" or "".
std::string annotations(const Option& o) {
  std::vector<std::string> parts;
  if (!o.choices().empty()) parts.push_back("one of: " + detail::join(o.choices(), ", "));
  if (std::string r = detail::format_range(o); !r.empty()) {
    std::replace(r.begin(), r.end(), ' ', kNoBreak);  // keep "[1, 1000]" on one line
    parts.push_back("range " + r);
  }
  if (o.is_repeatable()) parts.push_back("repeatable");
  if (o.is_required()) {
    parts.push_back("required");
  } else if (o.default_value()) {
    const std::string d = detail::format_value(*o.default_value());
    const bool is_off_switch = o.type() == OptionType::Switch && d == "false";
    if (!d.empty() && !is_off_switch) parts.push_back("default: " + d);
  }
  return parts.empty() ? "" : "(" + detail::join(parts, "; ") + ")";
}

// Appends `left` and the wrapped `help` as one entry of a two-column list.
void add_entry(std::string* out, const std::string& left, const std::string& help, size_t col,
               size_t width) {
  const std::vector<std::string> lines = wrap(help, width - col);
  *out += left;
  size_t at = left.size();
  if (at + 2 > col && !lines.empty()) {  // too long: the help starts on the next line
    *out += "\n";
    at = 0;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) *out += "\n", at = 0;
    *out += std::string(col - at, ' ') + lines[i];
  }
  *out += "\n";
}

}  // namespace

std::string OptionSet::format_help(std::string_view program, std::string_view subcommand,
                                   std::string_view description, int width) const {
  QKV_CHECK(width >= 40, InternalError, "format_help: width ", width, " < 40");
  check_declarations();
  const size_t w = static_cast<size_t>(width);
  std::string out = "Usage: " + std::string(program);
  if (!subcommand.empty()) out += " " + std::string(subcommand);
  out += " [options]";
  if (positionals_) out += " [" + positionals_->first + "...]";
  out += "\n";
  if (!description.empty()) {
    out += "\n";
    for (const std::string& line : wrap(description, w)) out += line + "\n";
  }

  // The help column starts after the longest flag, but never past 32 columns or 40% of
  // the width (so the help keeps >= 24 columns): longer flags put their help on the next line.
  size_t col = 0;
  for (const Option& o : options_) col = std::max(col, left_column(o).size() + 2);
  if (positionals_) col = std::max(col, positionals_->first.size() + 7);
  col = std::min({col, size_t{32}, w * 2 / 5});

  if (positionals_) {
    out += "\nArguments:\n";
    add_entry(&out, "  " + positionals_->first + "...", positionals_->second, col, w);
  }
  out += "\nOptions:\n";
  for (const Option& o : options_) {
    std::string help = o.help();
    if (const std::string a = annotations(o); !a.empty()) help += (help.empty() ? "" : " ") + a;
    add_entry(&out, left_column(o), help, col, w);
  }
  return out;
}

}  // namespace qkv::cli
