#include "qkv/cli/budget.h"

#include <charconv>
#include <limits>
#include <system_error>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/format.h"

namespace qkv::cli {

namespace {

constexpr const char* kForms =
    "use <N>u (updates), <N>e (epochs), <N>s, <N>m or <N>h (wall time), or several joined "
    "by commas to stop at whichever comes first (e.g. 5e,30m); 0 means no limit";

class BudgetParser {
 public:
  BudgetParser(std::string_view text, std::string_view where) : text_(text), where_(where) {}

  Budget run() {
    const std::string_view all = trim_blanks(text_);
    if (all.empty()) fail("it is empty");
    if (all == "0") return budget_;
    size_t start = 0;
    while (true) {
      const size_t comma = all.find(',', start);
      part(trim_blanks(all.substr(start, comma == std::string_view::npos ? comma : comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return budget_;
  }

 private:
  [[noreturn]] void fail(std::string_view why) const {
    QKV_THROW(ConfigError, where_, ": '", text_, "' is not a budget (", why, "); ", kForms);
  }

  // One "<count><unit>".
  void part(std::string_view p) {
    if (p.empty()) fail("an empty part between commas");
    int64_t count = 0;
    const auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), count);
    const std::string quoted = "'" + std::string(p) + "'";
    if (ec == std::errc::result_out_of_range) fail(quoted + " has a count that is too large");
    if (ec != std::errc() || p[0] == '-' || p[0] == '+')
      fail(quoted + " does not start with a count");
    const std::string_view unit(ptr, static_cast<size_t>(p.data() + p.size() - ptr));
    if (unit.empty()) fail(quoted + " has no unit");
    if (unit.size() != 1 || std::string_view("uesmh").find(unit[0]) == std::string_view::npos)
      fail(quoted + " has the unknown unit '" + std::string(unit) + "'");
    switch (unit[0]) {
      case 'u':
        set(&budget_.updates, &seen_updates_, count, "updates");
        break;
      case 'e':
        set(&budget_.epochs, &seen_epochs_, count, "epochs");
        break;
      default: {
        const int64_t scale = unit[0] == 'h' ? 3600 : unit[0] == 'm' ? 60 : 1;
        if (count > std::numeric_limits<int64_t>::max() / scale)
          fail(quoted + " is too long a time");
        std::optional<int64_t> seconds;
        set(&seconds, &seen_time_, count * scale, "wall time");
        if (seconds) budget_.wall_time = std::chrono::seconds(*seconds);
      }
    }
  }

  void set(std::optional<int64_t>* slot, bool* seen, int64_t count, const char* what) {
    if (*seen) fail(std::string(what) + " given twice");
    *seen = true;
    if (count > 0) *slot = count;  // 0: no limit of this kind
  }

  std::string_view text_, where_;
  Budget budget_;
  bool seen_updates_ = false, seen_epochs_ = false, seen_time_ = false;
};

}  // namespace

Budget parse_budget(std::string_view text, std::string_view where) {
  return BudgetParser(text, where).run();
}

bool Budget::reached(int64_t updates_done, int64_t epochs_done,
                     std::chrono::seconds elapsed) const {
  return (updates && updates_done >= *updates) || (epochs && epochs_done >= *epochs) ||
         (wall_time && elapsed >= *wall_time);
}

std::string Budget::to_string() const {
  std::vector<std::string> parts;
  if (updates) parts.push_back(std::to_string(*updates) + "u");
  if (epochs) parts.push_back(std::to_string(*epochs) + "e");
  if (wall_time) {
    const int64_t s = wall_time->count();
    parts.push_back(s % 3600 == 0 ? std::to_string(s / 3600) + "h"
                    : s % 60 == 0 ? std::to_string(s / 60) + "m"
                                  : std::to_string(s) + "s");
  }
  if (parts.empty()) return "0";
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += "," + parts[i];
  return out;
}

Validator budget_validator() {
  return [](const std::string& value, const std::string& where) { parse_budget(value, where); };
}

}  // namespace qkv::cli
