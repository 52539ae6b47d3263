// Training budgets for `--after`-style flags (Marian's convention): when to stop.
//
//   1000u   1000 updates            5e   5 epochs
//   30s, 10m, 2h   wall time        5e,30m   whichever comes first
//   0 (or a zero count, e.g. 0e)    no limit, as Marian's "0 is infinity"
//
// Counts are non-negative integers; a kind appears at most once (wall time counts as one
// kind, so "1h,30m" is an error rather than a silent choice).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "qkv/cli/options.h"

namespace qkv::cli {

struct Budget {
  std::optional<int64_t> updates;                 // stop after this many updates
  std::optional<int64_t> epochs;                  // ... epochs
  std::optional<std::chrono::seconds> wall_time;  // ... seconds since training started

  // No limit at all: training runs until something else stops it.
  bool unlimited() const { return !updates && !epochs && !wall_time; }
  // True once any of the limits is reached (whichever comes first).
  bool reached(int64_t updates_done, int64_t epochs_done, std::chrono::seconds elapsed) const;
  // The canonical spelling, parse_budget(to_string()) == *this: "1000u,5e,30m", "0".
  std::string to_string() const;

  bool operator==(const Budget&) const = default;
};

// Parses `text` ("5e,30m"). Throws ConfigError naming `where` ("--after", or a config
// file's "cfg.yml:3: key 'after'") and listing the accepted forms.
Budget parse_budget(std::string_view text, std::string_view where = "--after");

// For OptionSet::add_validated: checks that the value parses as a Budget.
Validator budget_validator();

}  // namespace qkv::cli
