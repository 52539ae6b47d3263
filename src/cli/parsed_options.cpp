#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "detail/values.h"
#include "qkv/base/error.h"

namespace qkv::cli {

namespace detail {

ParsedOptions ParsedAccess::with_defaults(const OptionSet& set) {
  ParsedOptions out;
  for (const Option& o : set.options()) {
    out.index_.emplace(o.name(), out.entries_.size());
    out.entries_.push_back(
        {o.name(), o.type(), o.command_line_only(), o.default_value(), Source::Default});
  }
  return out;
}

void ParsedAccess::set(ParsedOptions& parsed, const std::string& name, Value value, Source source) {
  const auto it = parsed.index_.find(name);
  QKV_CHECK(it != parsed.index_.end(), InternalError, "no option --", name);
  ParsedOptions::Entry& e = parsed.entries_[it->second];
  e.value = std::move(value);
  e.source = source;
}

}  // namespace detail

namespace {

const char* type_name(OptionType t) {
  switch (t) {
    case OptionType::Int64:
      return "int64";
    case OptionType::Double:
      return "double";
    case OptionType::String:
      return "string";
    case OptionType::Path:
      return "path";
    case OptionType::Switch:
      return "switch";
    case OptionType::StringList:
      return "string list";
    case OptionType::Enum:
      return "enum";
    case OptionType::Validated:
      return "validated string";
  }
  return "?";
}

}  // namespace

const ParsedOptions::Entry& ParsedOptions::entry(std::string_view name, const char* getter) const {
  const auto it = index_.find(name);
  QKV_CHECK(it != index_.end(), InternalError, getter, "(\"", name, "\"): no such option declared");
  return entries_[it->second];
}

namespace {

template <class T>
const T& value_of(const auto& e, const char* getter, bool type_ok) {
  QKV_CHECK(type_ok, InternalError, getter, "(\"", e.name, "\"): the option is a ",
            type_name(e.type));
  QKV_CHECK(e.value.has_value(), InternalError, getter, "(\"", e.name,
            "\"): the option has no value (no default, not given); check has() first");
  return std::get<T>(*e.value);
}

}  // namespace

int64_t ParsedOptions::get_int(std::string_view name) const {
  const Entry& e = entry(name, "get<int64_t>");
  return value_of<int64_t>(e, "get<int64_t>", e.type == OptionType::Int64);
}

double ParsedOptions::get_double(std::string_view name) const {
  const Entry& e = entry(name, "get<double>");
  return value_of<double>(e, "get<double>", e.type == OptionType::Double);
}

bool ParsedOptions::get_bool(std::string_view name) const {
  const Entry& e = entry(name, "get<bool>");
  return value_of<bool>(e, "get<bool>", e.type == OptionType::Switch);
}

std::string ParsedOptions::get_string(std::string_view name) const {
  const Entry& e = entry(name, "get<std::string>");
  const bool ok = e.type == OptionType::String || e.type == OptionType::Path ||
                  e.type == OptionType::Enum || e.type == OptionType::Validated;
  return value_of<std::string>(e, "get<std::string>", ok);
}

std::filesystem::path ParsedOptions::get_path(std::string_view name) const {
  const Entry& e = entry(name, "get<path>");
  return value_of<std::string>(e, "get<path>", e.type == OptionType::Path);
}

const std::vector<std::string>& ParsedOptions::get_list(std::string_view name) const {
  const Entry& e = entry(name, "get_list");
  return value_of<std::vector<std::string>>(e, "get_list", e.type == OptionType::StringList);
}

bool ParsedOptions::is_set(std::string_view name) const {
  return entry(name, "is_set").source != Source::Default;
}

bool ParsedOptions::has(std::string_view name) const {
  return entry(name, "has").value.has_value();
}

Source ParsedOptions::source(std::string_view name) const {
  return entry(name, "source").source;
}

namespace {

// A string the loader reads back as it is: yaml-cpp writes a control character raw in a
// plain scalar (a carriage return, found by fuzz/fuzz_config), which the loader refuses
// (config files are text); in double quotes it writes an escape instead.
void emit_string(YAML::Emitter& out, const std::string& s) {
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    out << YAML::DoubleQuoted;
  out << s;
}

}  // namespace

std::string ParsedOptions::dump_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const Entry& e : entries_) {
    if (e.command_line_only || !e.value) continue;
    out << YAML::Key << e.name << YAML::Value;
    if (const auto* list = std::get_if<std::vector<std::string>>(&*e.value)) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const std::string& s : *list) emit_string(out, s);
      out << YAML::EndSeq;
    } else if (const auto* s = std::get_if<std::string>(&*e.value)) {
      emit_string(out, *s);
    } else {
      // Numbers and switches as the user would type them; the shortest exact decimal.
      out << detail::format_value(*e.value);
    }
  }
  out << YAML::EndMap;
  QKV_CHECK(out.good(), InternalError, "dump_yaml: ", out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

}  // namespace qkv::cli
