// Option parsing for the `qkv` subcommands, in Marian's conventions: kebab-case long
// flags (`--dim-emb 256`), multi-valued flags (`--train-sets a.en b.de`), switches
// (`--resume`), short aliases where declared (`-c FILE`), and a YAML config file
// (`-c FILE` / `--config FILE`) whose keys are the long flag names without dashes
// (`dim-emb: 256`, `train-sets: [a.en, b.de]`).
//
// Precedence: declared default < config file < command line. A list given on the command
// line replaces the config file's list (it does not append).
//
// Every mistake a user can make is a qkv::ConfigError naming the flag (or the file, line
// and key) and saying what to do, e.g. "unknown flag --dim-embd; did you mean --dim-emb?".
// Mistakes in the declarations themselves (a duplicate name, a default outside its range,
// get<T>() with the wrong T) are bugs in qkv and raise qkv::InternalError.
//
//   OptionSet opts;                                  // --config/-c and --help/-h built in
//   opts.add_int("dim-emb", 512, "Size of the embedding vectors.").range(1, 65536);
//   opts.add_list("train-sets", {}, "Source and target training corpora.").required();
//   opts.add_switch("resume", "Continue from the last checkpoint.");
//   ParsedOptions p = opts.parse(argc, argv);
//   if (p.help_requested()) { std::cout << opts.format_help("qkv", "train", "..."); }
//   int64_t dim = p.get<int64_t>("dim-emb");
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace qkv::cli {

enum class OptionType {
  Int64,       // --beam-size 6
  Double,      // --learn-rate 3e-4 (finite values only)
  String,      // --model-type transformer
  Path,        // --model model.safetensors (kept as written: relative to the working dir)
  Switch,      // --resume (no value; --resume=false overrides a config file's `true`)
  StringList,  // --train-sets a.en b.de: the values up to the next flag (`[]` in YAML)
  Enum,        // --type transformer, one of the declared choices
  Validated,   // a string checked by a caller-supplied Validator (e.g. --after 5e,30m)
};

// Checks a Validated option's value and throws qkv::ConfigError when it is bad. `where`
// names the origin for the message: "--after" on the command line, "cfg.yml:3: key
// 'after'" in a config file; the message should start with it.
using Validator = std::function<void(const std::string& value, const std::string& where)>;

// One option's value: int64_t (Int64), double (Double), bool (Switch), std::string (String,
// Path, Enum, Validated) or std::vector<std::string> (StringList).
using Value = std::variant<int64_t, double, bool, std::string, std::vector<std::string>>;

// Where an option's value came from.
enum class Source { Default, ConfigFile, CommandLine };

// One declared option. The add_* functions of OptionSet return it so that a declaration
// can be refined in one statement: opts.add_int(...).range(1, 1000).alias('b').
class Option {
 public:
  // A one-letter short form: alias('o') accepts `-o FILE`. Letters only.
  Option& alias(char short_name);
  // Numbers only: values outside [min, max] are rejected (use +-infinity for one side).
  Option& range(double min, double max);
  // The option must be given, on the command line or in the config file.
  Option& required();
  // The placeholder shown in --help ("FILE" instead of "PATH").
  Option& metavar(std::string name);
  // Lists only: each occurrence takes exactly one value and adds it (`--ref a --ref b`),
  // so a value after it can never be swallowed by the list (`--ref ref.de hyp.de` leaves
  // hyp.de a positional argument).
  Option& repeatable();

  const std::string& name() const { return name_; }
  char short_name() const { return short_name_; }
  OptionType type() const { return type_; }
  const std::string& help() const { return help_; }
  const std::optional<Value>& default_value() const { return default_; }
  const std::optional<double>& min() const { return min_; }
  const std::optional<double>& max() const { return max_; }
  const std::vector<std::string>& choices() const { return choices_; }
  const Validator& validator() const { return validator_; }
  bool is_required() const { return required_; }
  bool is_repeatable() const { return repeatable_; }
  // Only on the command line (config, help): not a config file key.
  bool command_line_only() const { return command_line_only_; }
  // The declared metavar, or one derived from the type: INT, FLOAT, STRING, PATH, ...
  std::string display_metavar() const;

 private:
  friend class OptionSet;
  Option() = default;

  std::string name_;
  char short_name_ = 0;
  OptionType type_ = OptionType::String;
  std::string help_;
  std::optional<Value> default_;
  std::optional<double> min_, max_;
  std::vector<std::string> choices_;
  Validator validator_;
  bool required_ = false;
  bool repeatable_ = false;
  bool command_line_only_ = false;
  std::string metavar_;
};

class ParsedOptions;
namespace detail {
struct ParsedAccess;
}

// The options of one subcommand. Declares --config (-c) and --help (-h) itself.
class OptionSet {
 public:
  OptionSet();

  // Names are kebab-case ([a-z0-9-], starting with a letter), unique. A std::nullopt
  // default means "no value unless given" (see ParsedOptions::has).
  Option& add_int(std::string name, std::optional<int64_t> default_value, std::string help);
  Option& add_double(std::string name, std::optional<double> default_value, std::string help);
  Option& add_string(std::string name, std::optional<std::string> default_value, std::string help);
  Option& add_path(std::string name, std::optional<std::string> default_value, std::string help);
  // A switch: false unless given.
  Option& add_switch(std::string name, std::string help);
  Option& add_list(std::string name, std::vector<std::string> default_value, std::string help);
  Option& add_enum(std::string name, std::vector<std::string> choices,
                   std::optional<std::string> default_value, std::string help);
  // A string checked by `validator` (on the command line, in the config file, and the
  // default here).
  Option& add_validated(std::string name, std::optional<std::string> default_value,
                        Validator validator, std::string help);
  // Allows positional arguments (none by default), shown as `metavar...` in --help.
  void allow_positionals(std::string metavar, std::string help);

  // argv[0] is the program (or subcommand) name and is skipped, as main() receives it.
  ParsedOptions parse(int argc, const char* const* argv) const;
  // `args` excludes the program name. `--name=value` also works (for a list: exactly one
  // element). A value may not look like a flag ("-x", "--x"; "-" and "-3" are values)
  // unless given with '='. `--` ends the options: what follows is positional.
  // With -h/--help anywhere before `--`, nothing else is checked and only defaults are
  // returned (so `qkv train --help` works without the required options).
  ParsedOptions parse(const std::vector<std::string>& args) const;

  // The --help text: usage line, description, every option with its metavar, help text,
  // choices, range, default and whether it is required, wrapped to `width` columns.
  std::string format_help(std::string_view program, std::string_view subcommand,
                          std::string_view description, int width = 80) const;

  // Declaration order.
  const std::deque<Option>& options() const { return options_; }
  // The option with this long name or short alias; nullptr when there is none.
  const Option* find(std::string_view name) const;
  const Option* find_short(char short_name) const;
  // The declared option nearest to `name` by edit distance, or "" when none is close.
  std::string closest_name(std::string_view name) const;

 private:
  Option& add(std::string name, OptionType type, std::optional<Value> default_value,
              std::string help);
  // Two options with the same short alias (InternalError); run by parse().
  void check_declarations() const;

  std::deque<Option> options_;  // a deque: add_*() hands out references that must stay valid
  std::map<std::string, size_t, std::less<>> by_name_;
  std::optional<std::pair<std::string, std::string>> positionals_;  // metavar, help
};

// The candidate nearest to `word` by edit distance (1 edit for words of up to 4 characters,
// 2 up to 10, else 3), or else the one candidate that `word` (>= 3 characters) is a prefix
// of; "" when none is close. What "did you mean" suggestions for flags and commands use.
std::string closest_word(std::string_view word, const std::vector<std::string>& candidates);

// What parse() returns: every declared option's value and where it came from.
class ParsedOptions {
 public:
  // get<int64_t>, get<double>, get<bool>, get<std::string>, get<std::filesystem::path>,
  // get<std::vector<std::string>>. std::string reads String, Path, Enum and Validated
  // options; the others need the option's own type. Throws InternalError for an
  // undeclared name, a T that does not match, or an option without a value (check has()).
  template <class T>
  T get(std::string_view name) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      return get_int(name);
    } else if constexpr (std::is_same_v<T, double>) {
      return get_double(name);
    } else if constexpr (std::is_same_v<T, bool>) {
      return get_bool(name);
    } else if constexpr (std::is_same_v<T, std::string>) {
      return get_string(name);
    } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
      return get_path(name);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      return get_list(name);
    } else {
      static_assert(!sizeof(T), "get<T>: T is not an option value type");
    }
  }
  const std::vector<std::string>& get_list(std::string_view name) const;

  // Given explicitly (command line or config file), not just defaulted.
  bool is_set(std::string_view name) const;
  // Has a value: given, or declared with a default.
  bool has(std::string_view name) const;
  // Whether the option set that parsed these declared `name` (flag groups read options
  // that some commands leave out).
  bool declares(std::string_view name) const { return index_.find(name) != index_.end(); }
  Source source(std::string_view name) const;

  bool help_requested() const { return help_requested_; }
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Every option with a value except config/help, as a YAML config file that parse()
  // reads back to the same values (e.g. saved beside a model to record how it was trained;
  // checked by fuzz/fuzz_config). YAML is Unicode text, so a command-line value that is
  // not valid UTF-8 comes back with U+FFFD in place of the bad bytes.
  std::string dump_yaml() const;

 private:
  friend struct detail::ParsedAccess;
  struct Entry {
    std::string name;
    OptionType type;
    bool command_line_only;
    std::optional<Value> value;
    Source source = Source::Default;
  };
  const Entry& entry(std::string_view name, const char* getter) const;
  int64_t get_int(std::string_view name) const;
  double get_double(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  std::string get_string(std::string_view name) const;
  std::filesystem::path get_path(std::string_view name) const;

  std::vector<Entry> entries_;  // declaration order
  std::map<std::string, size_t, std::less<>> index_;
  bool help_requested_ = false;
  std::vector<std::string> positionals_;
};

}  // namespace qkv::cli
