// Declaring options. Mistakes here are bugs in qkv (InternalError), found the first time
// a subcommand's declarations run, i.e. by any test that builds its OptionSet.
#include <algorithm>
#include <cmath>

#include "detail/values.h"
#include "qkv/base/error.h"

namespace qkv::cli {

namespace {

bool is_kebab_case(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z' || name.back() == '-') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && name[i - 1] == '-')) return false;
  }
  return true;
}

bool is_ascii_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

Option& Option::alias(char short_name) {
  QKV_CHECK(is_ascii_letter(short_name), InternalError, "--", name_,
            ": a short alias must be a letter, not '", short_name, "'");
  short_name_ = short_name;
  return *this;
}

Option& Option::range(double min, double max) {
  QKV_CHECK(type_ == OptionType::Int64 || type_ == OptionType::Double, InternalError, "--", name_,
            ": only numbers have a range");
  QKV_CHECK(!std::isnan(min) && !std::isnan(max) && min <= max, InternalError, "--", name_,
            ": bad range [", min, ", ", max, "]");
  min_ = min;
  max_ = max;
  if (default_) {
    const double v = type_ == OptionType::Int64 ? static_cast<double>(std::get<int64_t>(*default_))
                                                : std::get<double>(*default_);
    QKV_CHECK(v >= min && v <= max, InternalError, "--", name_, ": default ",
              detail::format_value(*default_), " outside ", detail::format_range(*this));
  }
  return *this;
}

Option& Option::required() {
  required_ = true;
  return *this;
}

Option& Option::repeatable() {
  QKV_CHECK(type_ == OptionType::StringList, InternalError, "--", name_,
            ": only a list option can be repeatable");
  repeatable_ = true;
  return *this;
}

Option& Option::metavar(std::string name) {
  metavar_ = std::move(name);
  return *this;
}

std::string Option::display_metavar() const {
  if (!metavar_.empty()) return metavar_;
  switch (type_) {
    case OptionType::Int64:
      return "INT";
    case OptionType::Double:
      return "FLOAT";
    case OptionType::Path:
      return "PATH";
    case OptionType::Switch:
      return "";
    case OptionType::StringList:
      return "STRING...";
    case OptionType::Enum:
      return "CHOICE";
    case OptionType::Validated:
      return "VALUE";
    case OptionType::String:
      break;
  }
  return "STRING";
}

OptionSet::OptionSet() {
  Option& config = add_path("config", std::nullopt,
                            "YAML file of options: its keys are the long flag names without "
                            "dashes (dim-emb: 256, train-sets: [a.en, b.de]); flags given on "
                            "the command line override it.")
                       .alias('c')
                       .metavar("FILE");
  config.command_line_only_ = true;
  Option& help = add_switch("help", "Print this help and exit.").alias('h');
  help.command_line_only_ = true;
}

Option& OptionSet::add(std::string name, OptionType type, std::optional<Value> default_value,
                       std::string help) {
  QKV_CHECK(is_kebab_case(name), InternalError, "option name '", name,
            "' is not kebab-case (lower-case letters, digits, single dashes)");
  QKV_CHECK(!by_name_.contains(name), InternalError, "option --", name, " declared twice");
  Option option;
  option.name_ = std::move(name);
  option.type_ = type;
  option.default_ = std::move(default_value);
  option.help_ = std::move(help);
  by_name_.emplace(option.name_, options_.size());
  options_.push_back(std::move(option));
  return options_.back();
}

Option& OptionSet::add_int(std::string name, std::optional<int64_t> default_value,
                           std::string help) {
  std::optional<Value> d;
  if (default_value) d = *default_value;
  return add(std::move(name), OptionType::Int64, std::move(d), std::move(help));
}

Option& OptionSet::add_double(std::string name, std::optional<double> default_value,
                              std::string help) {
  QKV_CHECK(!default_value || std::isfinite(*default_value), InternalError, "--", name,
            ": the default must be finite");
  std::optional<Value> d;
  if (default_value) d = *default_value;
  return add(std::move(name), OptionType::Double, std::move(d), std::move(help));
}

Option& OptionSet::add_string(std::string name, std::optional<std::string> default_value,
                              std::string help) {
  std::optional<Value> d;
  if (default_value) d = std::move(*default_value);
  return add(std::move(name), OptionType::String, std::move(d), std::move(help));
}

Option& OptionSet::add_path(std::string name, std::optional<std::string> default_value,
                            std::string help) {
  std::optional<Value> d;
  if (default_value) d = std::move(*default_value);
  return add(std::move(name), OptionType::Path, std::move(d), std::move(help));
}

Option& OptionSet::add_switch(std::string name, std::string help) {
  // In place: GCC 12 at -O1 with sanitizers warns (falsely) about moving a temporary Value.
  std::optional<Value> off(std::in_place, false);
  return add(std::move(name), OptionType::Switch, std::move(off), std::move(help));
}

Option& OptionSet::add_list(std::string name, std::vector<std::string> default_value,
                            std::string help) {
  return add(std::move(name), OptionType::StringList, Value(std::move(default_value)),
             std::move(help));
}

Option& OptionSet::add_enum(std::string name, std::vector<std::string> choices,
                            std::optional<std::string> default_value, std::string help) {
  QKV_CHECK(!choices.empty(), InternalError, "--", name, ": an enum needs choices");
  QKV_CHECK(
      !default_value || std::find(choices.begin(), choices.end(), *default_value) != choices.end(),
      InternalError, "--", name, ": default '", *default_value,
      "' is not one of: ", detail::join(choices, ", "));
  std::optional<Value> d;
  if (default_value) d = std::move(*default_value);
  Option& option = add(std::move(name), OptionType::Enum, std::move(d), std::move(help));
  option.choices_ = std::move(choices);
  return option;
}

Option& OptionSet::add_validated(std::string name, std::optional<std::string> default_value,
                                 Validator validator, std::string help) {
  QKV_CHECK(static_cast<bool>(validator), InternalError, "--", name, ": no validator");
  if (default_value) {
    try {
      validator(*default_value, "--" + name);
    } catch (const ConfigError& e) {
      QKV_THROW(InternalError, "invalid default: ", e.what());
    }
  }
  std::optional<Value> d;
  if (default_value) d = std::move(*default_value);
  Option& option = add(std::move(name), OptionType::Validated, std::move(d), std::move(help));
  option.validator_ = std::move(validator);
  return option;
}

void OptionSet::allow_positionals(std::string metavar, std::string help) {
  positionals_.emplace(std::move(metavar), std::move(help));
}

const Option* OptionSet::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &options_[it->second];
}

const Option* OptionSet::find_short(char short_name) const {
  for (const Option& o : options_)
    if (o.short_name() != 0 && o.short_name() == short_name) return &o;
  return nullptr;
}

std::string OptionSet::closest_name(std::string_view name) const {
  std::vector<std::string> names;
  names.reserve(options_.size());
  for (const Option& o : options_) names.push_back(o.name());
  return closest_word(name, names);
}

std::string closest_word(std::string_view word, const std::vector<std::string>& candidates) {
  // Typos of short words are more often a different word: allow fewer edits.
  const size_t max_edits = word.size() <= 4 ? 1 : word.size() <= 10 ? 2 : 3;
  const std::string* best = nullptr;
  size_t best_edits = max_edits + 1;
  for (const std::string& c : candidates) {
    const size_t d = detail::edit_distance(word, c);
    if (d < best_edits) best = &c, best_edits = d;
  }
  if (best) return *best;
  // A prefix of exactly one candidate ("--train" for "--train-sets") is also a likely intent.
  const std::string* prefixed = nullptr;
  int count = 0;
  for (const std::string& c : candidates)
    if (word.size() >= 3 && c.starts_with(word)) prefixed = &c, ++count;
  return count == 1 ? *prefixed : std::string();
}

void OptionSet::check_declarations() const {
  for (size_t i = 0; i < options_.size(); ++i) {
    const char s = options_[i].short_name();
    if (s == 0) continue;
    for (size_t j = i + 1; j < options_.size(); ++j)
      QKV_CHECK(options_[j].short_name() != s, InternalError, "short alias -", s,
                " declared for both --", options_[i].name(), " and --", options_[j].name());
  }
}

}  // namespace qkv::cli
