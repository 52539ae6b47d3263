// The command line: flags, their values, positionals; then the config file underneath.
#include <map>
#include <utility>

#include "detail/config_file.h"
#include "detail/values.h"
#include "qkv/base/error.h"

namespace qkv::cli {

namespace {

using qkv::detail::concat;

// "--x", "-x", "-dim-emb"; not "-" (stdin), "-3" or "-.5" (negative numbers are values).
bool looks_like_flag(std::string_view tok) {
  return tok.size() >= 2 && tok[0] == '-' && !(tok[1] >= '0' && tok[1] <= '9') && tok[1] != '.';
}

[[noreturn]] void unknown_flag(const OptionSet& set, std::string_view tok) {
  const bool is_short = tok.size() == 2 && tok[0] == '-' && tok[1] != '-';
  if (is_short) {
    std::vector<std::string> shorts;
    for (const Option& o : set.options())
      if (o.short_name() != 0) shorts.push_back(std::string("-") + o.short_name());
    QKV_THROW(ConfigError, "unknown flag ", tok, "; the short flags are ",
              detail::join(shorts, ", "), " (see --help)");
  }
  const std::string_view name = tok.substr(tok[1] == '-' ? 2 : 1);
  const std::string guess = set.closest_name(name);
  QKV_CHECK(guess.empty(), ConfigError, "unknown flag ", tok, "; did you mean --", guess, "?");
  QKV_THROW(ConfigError, "unknown flag ", tok, "; see --help for the flags this command takes");
}

struct Given {
  const Option* option;
  Value value;
};

class ArgParser {
 public:
  ArgParser(const OptionSet& set, const std::vector<std::string>& args, bool positionals_ok)
      : set_(set), args_(args), positionals_ok_(positionals_ok) {}

  // Parses every argument; values and positionals in the order given.
  void run(std::vector<Given>* given, std::vector<std::string>* positionals) {
    bool only_positionals = false;
    const Option* previous_switch = nullptr;
    while (i_ < args_.size()) {
      const std::string& tok = args_[i_];
      if (!only_positionals && tok == "--") {
        only_positionals = true;
        ++i_;
        continue;
      }
      if (only_positionals || !looks_like_flag(tok)) {
        positional(tok, previous_switch);
        positionals->push_back(tok);
        ++i_;
        continue;
      }
      given->push_back(flag());
      previous_switch = given->back().option->type() == OptionType::Switch &&
                                args_[i_ - 1].find('=') == std::string::npos
                            ? given->back().option
                            : nullptr;
    }
  }

 private:
  void positional(const std::string& tok, const Option* previous_switch) const {
    if (positionals_ok_) return;
    QKV_CHECK(previous_switch == nullptr, ConfigError, "unexpected argument '", tok, "': --",
              previous_switch->name(), " is a switch and takes no value (--",
              previous_switch->name(), "=false turns it off)");
    QKV_THROW(ConfigError, "unexpected argument '", tok,
              "': this command takes no positional arguments (is a flag missing before it?)");
  }

  // Parses the flag at args_[i_] and its values; advances i_ past them.
  Given flag() {
    const std::string& tok = args_[i_++];
    const bool is_long = tok[1] == '-';
    const size_t eq = is_long ? tok.find('=') : std::string::npos;
    const std::string name = is_long ? tok.substr(2, eq - 2) : std::string();
    const Option* option = is_long           ? set_.find(name)
                           : tok.size() == 2 ? set_.find_short(tok[1])
                                             : nullptr;
    if (option == nullptr) unknown_flag(set_, is_long ? std::string_view(tok).substr(0, eq) : tok);
    const auto [it, inserted] = seen_.emplace(option->name(), tok.substr(0, eq));
    const std::string& first = it->second;
    const std::string spelled = tok.substr(0, eq);
    QKV_CHECK(inserted || option->is_repeatable(), ConfigError, "--", option->name(),
              " given twice", first == spelled ? "" : concat(" (as ", first, " and ", spelled, ")"),
              "; give it once");

    std::vector<std::string> raw;
    if (eq != std::string::npos) {
      raw.push_back(tok.substr(eq + 1));
    } else if (option->type() == OptionType::StringList && !option->is_repeatable()) {
      while (i_ < args_.size() && !looks_like_flag(args_[i_])) raw.push_back(args_[i_++]);
    } else if (option->type() != OptionType::Switch && i_ < args_.size() &&
               !looks_like_flag(args_[i_])) {
      raw.push_back(args_[i_++]);
    }
    const bool needs_value = option->type() != OptionType::Switch;
    QKV_CHECK(!needs_value || !raw.empty(), ConfigError, "--", option->name(),
              ": missing value; give it as --", option->name(), " ", option->display_metavar());
    return {option, detail::parse_value(*option, raw, detail::Origin::command_line(*option))};
  }

  const OptionSet& set_;
  const std::vector<std::string>& args_;
  bool positionals_ok_;
  size_t i_ = 0;
  std::map<std::string, std::string> seen_;  // option name -> how it was first spelled
};

}  // namespace

ParsedOptions OptionSet::parse(int argc, const char* const* argv) const {
  QKV_CHECK(argc >= 0 && (argc == 0 || argv != nullptr), InternalError, "parse: bad argv");
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse(args);
}

ParsedOptions OptionSet::parse(const std::vector<std::string>& args) const {
  check_declarations();
  ParsedOptions out = detail::ParsedAccess::with_defaults(*this);
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help") {
      detail::ParsedAccess::set_help(out);
      return out;
    }
  }

  std::vector<Given> given;
  std::vector<std::string> positionals;
  ArgParser(*this, args, positionals_.has_value()).run(&given, &positionals);

  // The config file goes underneath: apply it first, then what the command line says.
  for (const Given& g : given) {
    if (g.option->name() != "config") continue;
    for (auto& [option, value] : detail::load_config(*this, std::get<std::string>(g.value)))
      detail::ParsedAccess::set(out, option->name(), std::move(value), Source::ConfigFile);
  }
  // A repeatable list's occurrences add up; its command-line values replace the file's.
  std::map<std::string, std::vector<std::string>> repeated;
  for (Given& g : given) {
    if (!g.option->is_repeatable()) {
      detail::ParsedAccess::set(out, g.option->name(), std::move(g.value), Source::CommandLine);
      continue;
    }
    auto& values = repeated[g.option->name()];
    for (std::string& v : std::get<std::vector<std::string>>(g.value))
      values.push_back(std::move(v));
  }
  for (auto& [name, values] : repeated)
    detail::ParsedAccess::set(out, name, std::move(values), Source::CommandLine);
  for (std::string& p : positionals) detail::ParsedAccess::add_positional(out, std::move(p));

  for (const Option& o : options_)
    QKV_CHECK(!o.is_required() || out.is_set(o.name()), ConfigError, "missing required option --",
              o.name(), "; give it on the command line (--", o.name(), " ", o.display_metavar(),
              ") or as '", o.name(), ":' in the config file (-c FILE)");
  return out;
}

}  // namespace qkv::cli
