// Progress lines for the decoding commands (cli/progress.h).
#include "qkv/cli/progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "qkv/base/format.h"
#include "qkv/base/plural.h"
#include "qkv/cli/options.h"

namespace qkv::cli {

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Progress::Progress(std::string what, std::string unit, double interval_seconds, int64_t total_bytes,
                   std::ostream& out, Clock clock)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      interval_(interval_seconds),
      total_bytes_(total_bytes),
      out_(out),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)),
      start_(clock_()),
      last_(start_) {}

void Progress::update(int64_t done, int64_t bytes) {
  if (interval_ <= 0) return;
  const double now = clock_();
  if (now - last_ < interval_) return;
  last_ = now;
  out_ << line(done, bytes, now - start_) << '\n' << std::flush;
}

std::string Progress::line(int64_t done, int64_t bytes, double elapsed) const {
  std::string s = what_ + ": " + count_of(done, unit_);
  if (elapsed > 0) s += ", " + format_fixed(double(done) / elapsed, 1) + " " + unit_ + "s/s";
  if (total_bytes_ > 0 && bytes > 0) {
    // Bytes are counted without line breaks, so the share is a little low: never 100%
    // before the end.
    const double share = std::min(double(bytes) / double(total_bytes_), 0.99);
    s += ", " + format_fixed(100 * share, 0) + "% of the input";
    if (elapsed > 0) s += ", about " + rough_duration(elapsed * (1 - share) / share) + " left";
  }
  return s;
}

void add_progress_option(OptionSet& options) {
  options
      .add_double("disp-seconds", kProgressSeconds,
                  "A progress line on stderr every S seconds (lines done, lines/s, share of a "
                  "file on stdin and time left); by default only when stderr is a terminal, "
                  "always when given (0: none).")
      .range(0, 1e9)
      .metavar("S");
}

double progress_interval(const ParsedOptions& options) {
  if (options.is_set("disp-seconds")) return options.get<double>("disp-seconds");
  return isatty(STDERR_FILENO) != 0 ? kProgressSeconds : 0.0;
}

int64_t stdin_file_size() {
  struct stat st {};
  if (fstat(STDIN_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return int64_t(st.st_size);
}

std::string rough_duration(double seconds) {
  const auto s = int64_t(std::llround(std::max(seconds, 0.0)));
  const auto two = [](int64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + two(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + two(s / 60 % 60) + "m";
}

}  // namespace qkv::cli
