// Private: turning the strings a user typed (or wrote in a config file) into typed option
// values, and the wording of every message about them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/cli/options.h"

namespace qkv::cli::detail {

// Where a value was written, so that a message can point at it.
struct Origin {
  std::string flag;  // "--dim-emb" on the command line; empty for a config file
  std::string file;  // the config file
  int line = 0;      // 1-based line in `file`; 0 when unknown
  std::string key;   // the config file key

  static Origin command_line(const Option& option) { return {"--" + option.name(), {}, 0, {}}; }
  static Origin config_file(std::string file, int line, std::string key) {
    return {{}, std::move(file), line, std::move(key)};
  }
  // "cfg.yml:3: " (or "cfg.yml: " without a line); "" on the command line.
  std::string file_prefix() const;
  // "--dim-emb" or "cfg.yml:3: key 'dim-emb'".
  std::string name() const;
  // "--dim-emb abc" or "cfg.yml:3: key 'dim-emb' is abc": the value as the user wrote it.
  std::string with_value(std::string_view raw) const;
};

// Converts `raw` (one string, or one per element for a StringList; empty for a switch
// given without a value) to the option's type and checks it against the range, the
// choices or the validator. Throws ConfigError naming `origin`.
Value parse_value(const Option& option, const std::vector<std::string>& raw, const Origin& origin);

// "true", "yes", "on", "1" / "false", "no", "off", "0" (as YAML 1.1 and most CLIs read them).
bool parse_bool(std::string_view text, bool* out);

// The shortest decimal that reads back to `x`, as %g would write it ("0.0003", "512", "1e-05").
std::string format_number(double x);
// A value as the user would type it: lists space-separated, switches true/false.
std::string format_value(const Value& value);
// "[1, 1000]", ">= 1" or "<= 5"; "" without a range.
std::string format_range(const Option& option);

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// two adjacent characters ("dmi" -> "dim") each cost 1.
size_t edit_distance(std::string_view a, std::string_view b);

// "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view sep);

// The one place that builds a ParsedOptions.
struct ParsedAccess {
  static ParsedOptions with_defaults(const OptionSet& set);
  static void set(ParsedOptions& parsed, const std::string& name, Value value, Source source);
  static void set_help(ParsedOptions& parsed) { parsed.help_requested_ = true; }
  static void add_positional(ParsedOptions& parsed, std::string arg) {
    parsed.positionals_.push_back(std::move(arg));
  }
};

}  // namespace qkv::cli::detail
