#include "detail/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <system_error>

#include "detail/values.h"
#include "qkv/base/error.h"
#include "qkv/base/utf8.h"

namespace qkv::cli::detail {

namespace {

std::string read_config(const std::string& path) {
  std::error_code ec;
  QKV_CHECK(std::filesystem::exists(path, ec), ConfigError, "--config ", path,
            ": no such file; check the path given with -c/--config");
  QKV_CHECK(!std::filesystem::is_directory(path, ec), ConfigError, "--config ", path,
            ": is a directory, not a YAML file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  QKV_CHECK(in.good() || in.eof(), ConfigError, "--config ", path,
            ": cannot be read (check its permissions)");
  return text.str();
}

// True for the C0 control characters other than tab and line breaks, which YAML does not
// allow unescaped (YAML 1.2, sec. 5.1), and for a carriage return not followed by '\n'
// (YAML reads it as a line break, yaml-cpp as part of a value). DEL and C1 are not
// printable either, but yaml-cpp reads them faithfully and writes them unescaped, so
// they are let through.
bool is_unprintable(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == '\r') return i + 1 == s.size() || s[i + 1] != '\n';
  return c < 0x20 && c != '\t' && c != '\n';
}

// A YAML stream is Unicode text (YAML 1.2, sec. 5.1-5.2). yaml-cpp reads other
// bytes without complaint but not faithfully: bytes that are not UTF-8 come back from
// ParsedOptions::dump_yaml() as U+FFFD, a raw NUL in a plain scalar is read as a lone
// 0xA0 byte, lone carriage returns end up in values and are trimmed on the next read (all
// found by fuzz/fuzz_config), so the dumped config would no longer hold the same values. Reject
// such a file here, naming the line, column and byte; escapes
// ("\x00" in a double-quoted string) still work.
void check_text(const std::string& path, std::string_view text) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8::sequence_length(text, i);  // 0: not UTF-8
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 0 || is_unprintable(text, i)) {
      char what[64];
      std::snprintf(what, sizeof what,
                    n == 0 ? "not valid UTF-8 (byte 0x%02X)" : "control character U+%04X", c);
      QKV_THROW(ConfigError, path, ":", line, ":", i - line_start + 1, ": ", what,
                "; a config file must be UTF-8 text without control characters "
                "(write \"\\xNN\" escapes in double quotes)");
    }
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
    i += n;
  }
}

YAML::Node parse_yaml(const std::string& path, const std::string& text) {
  check_text(path, text);
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    // yaml-cpp's marks are 0-based.
    QKV_THROW(ConfigError, path, ":", e.mark.line + 1, ":", e.mark.column + 1,
              ": YAML syntax error: ", e.msg, "; fix the file (is the indentation right?)");
  } catch (const YAML::Exception& e) {
    QKV_THROW(ConfigError, path, ": not valid YAML: ", e.what());
  }
}

const char* kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return "a single value";
    default:
      return "nothing";
  }
}

const char* expected_kind(OptionType type) {
  switch (type) {
    case OptionType::Int64:
      return "an integer";
    case OptionType::Double:
      return "a number";
    case OptionType::Switch:
      return "true or false";
    case OptionType::StringList:
      return "a list ([a, b]) or a single value";
    default:
      return "a single value";
  }
}

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

// A scalar's text after YAML's escapes. yaml-cpp decodes "\_" and "\N" (U+00A0, U+0085)
// to single Latin-1 bytes, not UTF-8 (found by fuzz/fuzz_config): such a value would be
// kept as invalid text and written back unreadable by dump_yaml(), so it is refused here.
std::string scalar_text(const YAML::Node& node, const Origin& origin) {
  std::string s = node.Scalar();
  const size_t bad = utf8::first_invalid(s);
  if (bad != std::string::npos) {
    char what[16];
    std::snprintf(what, sizeof what, "0x%02X", static_cast<unsigned char>(s[bad]));
    QKV_THROW(ConfigError, origin.name(), ": the value is not valid UTF-8 after its escapes (byte ",
              what, "); write the character itself, or \\u00A0 for \\_ and \\u0085 for \\N");
  }
  return s;
}

// The strings of `value` for `option`: one for a scalar, one per element for a list.
std::vector<std::string> raw_strings(const Option& option, const YAML::Node& value,
                                     const Origin& origin) {
  QKV_CHECK(!value.IsNull(), ConfigError, origin.name(), " has no value; write ", origin.key, ": ",
            option.display_metavar(), " or remove the line");
  const bool is_list = option.type() == OptionType::StringList;
  if (value.IsScalar()) return {scalar_text(value, origin)};
  QKV_CHECK(is_list && value.IsSequence(), ConfigError, origin.name(), ": expected ",
            expected_kind(option.type()), ", got ", kind_name(value));
  std::vector<std::string> raw;
  for (size_t i = 0; i < value.size(); ++i) {
    QKV_CHECK(value[i].IsScalar(), ConfigError, origin.name(), ": element ", i + 1, " is ",
              kind_name(value[i]), ", expected a single value");
    raw.push_back(scalar_text(value[i], origin));
  }
  return raw;
}

}  // namespace

std::vector<std::pair<const Option*, Value>> load_config(const OptionSet& set,
                                                         const std::string& path) {
  const YAML::Node root = parse_yaml(path, read_config(path));
  std::vector<std::pair<const Option*, Value>> out;
  if (root.IsNull()) return out;  // an empty file sets nothing
  QKV_CHECK(root.IsMap(), ConfigError, path, ": expected option names with values ",
            "(dim-emb: 256), got ", kind_name(root));

  std::map<std::string, int> seen;  // key -> line
  for (const auto& kv : root) {
    const int line = line_of(kv.first);
    const Origin at = Origin::config_file(path, line, kv.first.IsScalar() ? kv.first.Scalar() : "");
    QKV_CHECK(kv.first.IsScalar(), ConfigError, at.file_prefix(),
              "a key must be an option name, got ", kind_name(kv.first));
    const std::string& key = at.key;
    const Option* option = set.find(key);
    if (option == nullptr) {
      const std::string guess = set.closest_name(key);
      QKV_CHECK(guess.empty(), ConfigError, at.file_prefix(), "unknown key '", key,
                "'; did you mean '", guess, "'?");
      QKV_THROW(ConfigError, at.file_prefix(), "unknown key '", key,
                "'; keys are the long flag names without dashes (see --help)");
    }
    QKV_CHECK(!option->command_line_only(), ConfigError, at.file_prefix(), "key '", key,
              "' is only allowed on the command line (--", key, ")");
    const auto [it, inserted] = seen.emplace(key, line);
    QKV_CHECK(inserted, ConfigError, at.name(), " given twice (first on line ", it->second,
              "); keep one");
    out.emplace_back(option, parse_value(*option, raw_strings(*option, kv.second, at), at));
  }
  return out;
}

}  // namespace qkv::cli::detail
