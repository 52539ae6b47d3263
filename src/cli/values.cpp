#include "detail/values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "qkv/base/error.h"

namespace qkv::cli::detail {

using qkv::detail::concat;

std::string Origin::file_prefix() const {
  if (file.empty()) return {};
  return line > 0 ? concat(file, ":", line, ": ") : file + ": ";
}

std::string Origin::name() const {
  return file.empty() ? flag : concat(file_prefix(), "key '", key, "'");
}

std::string Origin::with_value(std::string_view raw) const {
  return file.empty() ? concat(flag, " ", raw) : concat(name(), " is ", raw);
}

namespace {

int64_t parse_int(const std::string& raw, const Origin& origin) {
  int64_t v = 0;
  const char* end = raw.data() + raw.size();
  // from_chars rejects a leading '+'; accept it, as strtol and YAML do.
  const char* begin = raw.data() + (raw.size() > 1 && raw[0] == '+' ? 1 : 0);
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  QKV_CHECK(ec != std::errc::result_out_of_range, ConfigError, origin.name(), ": '", raw,
            "' does not fit a 64-bit integer");
  QKV_CHECK(ec == std::errc() && ptr == end && !raw.empty(), ConfigError, origin.name(), ": '", raw,
            "' is not an integer");
  return v;
}

double parse_double(const std::string& raw, const Origin& origin) {
  double v = 0.0;
  const char* end = raw.data() + raw.size();
  const char* begin = raw.data() + (raw.size() > 1 && raw[0] == '+' ? 1 : 0);
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  QKV_CHECK(ec == std::errc() && ptr == end && !raw.empty(), ConfigError, origin.name(), ": '", raw,
            "' is not a number");
  QKV_CHECK(std::isfinite(v), ConfigError, origin.name(), ": '", raw, "' is not a finite number");
  return v;
}

void check_range(const Option& option, double v, const std::string& raw, const Origin& origin) {
  const bool below = option.min() && v < *option.min();
  const bool above = option.max() && v > *option.max();
  if (!below && !above) return;
  const std::string range = format_range(option);
  QKV_THROW(ConfigError, origin.with_value(raw), ": must be ", range[0] == '[' ? "in " : "", range);
}

}  // namespace

Value parse_value(const Option& option, const std::vector<std::string>& raw, const Origin& origin) {
  if (option.type() == OptionType::StringList) return raw;
  if (option.type() == OptionType::Switch) {
    if (raw.empty()) return true;
    bool b = false;
    QKV_CHECK(parse_bool(raw[0], &b), ConfigError, origin.name(), ": '", raw[0],
              "' is not a boolean; use true or false");
    return b;
  }
  QKV_CHECK(raw.size() == 1, InternalError, origin.name(), ": expected one value, got ",
            raw.size());
  const std::string& text = raw[0];
  switch (option.type()) {
    case OptionType::Int64: {
      const int64_t v = parse_int(text, origin);
      check_range(option, static_cast<double>(v), text, origin);
      return v;
    }
    case OptionType::Double: {
      const double v = parse_double(text, origin);
      check_range(option, v, text, origin);
      return v;
    }
    case OptionType::Enum: {
      const auto& c = option.choices();
      QKV_CHECK(std::find(c.begin(), c.end(), text) != c.end(), ConfigError,
                origin.with_value(text), ": must be one of: ", join(c, ", "));
      return text;
    }
    case OptionType::Validated:
      option.validator()(text, origin.name());
      return text;
    default:
      return text;
  }
}

bool parse_bool(std::string_view text, bool* out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* t : {"true", "yes", "on", "1"})
    if (lower == t) return *out = true, true;
  for (const char* f : {"false", "no", "off", "0"})
    if (lower == f) return *out = false, true;
  return false;
}

std::string format_number(double x) {
  char buf[64];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::general);
  QKV_CHECK(ec == std::errc(), InternalError, "format_number failed");
  return std::string(buf, ptr);
}

std::string format_value(const Value& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_number(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return v; }
    std::string operator()(const std::vector<std::string>& v) const { return join(v, " "); }
  };
  return std::visit(Visitor{}, value);
}

std::string format_range(const Option& option) {
  const auto& lo = option.min();
  const auto& hi = option.max();
  const bool has_lo = lo && std::isfinite(*lo);
  const bool has_hi = hi && std::isfinite(*hi);
  // An integer flag's bounds in digits: "[5, 1000000]" reads better than "[5, 1e+06]".
  const auto bound = [&](double x) {
    const bool integral =
        option.type() == OptionType::Int64 && x == std::floor(x) && std::fabs(x) <= 9.2e18;
    return integral ? std::to_string(int64_t(x)) : format_number(x);
  };
  if (has_lo && has_hi) return concat("[", bound(*lo), ", ", bound(*hi), "]");
  if (has_lo) return ">= " + bound(*lo);
  if (has_hi) return "<= " + bound(*hi);
  return {};
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between a[0, i) and b[0, j); three rows suffice for the swap case.
  const size_t m = b.size();
  std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace qkv::cli::detail
