// Progress lines on stderr for the long decoding jobs (translate, score, attend): lines
// done, lines per second and, when the input's size is known, how far through it and
// about how long is left. The trainer prints its own (train/trainer.h); both follow
// --disp-seconds: a line every S seconds, by default only when stderr is a terminal, so
// logs and pipes stay quiet unless asked.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace qkv::cli {

class OptionSet;
class ParsedOptions;

// The default interval of a decoding command's progress lines on a terminal.
constexpr double kProgressSeconds = 5;

// Declares --disp-seconds for a decoding command (the trainer's flag of the same name).
void add_progress_option(OptionSet& options);

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  // `what` starts each line ("qkv translate"); `unit` counts ("line"). interval_seconds 0:
  // silent. total_bytes 0: the input's size is unknown (a pipe), so no share or time left.
  Progress(std::string what, std::string unit, double interval_seconds, int64_t total_bytes,
           std::ostream& out, Clock clock = {});

  // After each chunk: `done` units written so far, `bytes` of input consumed. Prints a
  // line when interval_seconds passed since the start or the last line.
  void update(int64_t done, int64_t bytes);

  // "qkv translate: 1200 lines, 35.2 lines/s, 40% of the input, about 1m20s left"
  std::string line(int64_t done, int64_t bytes, double elapsed) const;

 private:
  std::string what_, unit_;
  double interval_;
  int64_t total_bytes_;
  std::ostream& out_;
  Clock clock_;
  double start_, last_;
};

// The --disp-seconds of a decoding command: its value when given, else kProgressSeconds
// when stderr is a terminal, else 0 (no progress lines).
double progress_interval(const ParsedOptions& options);

// The size of the regular file behind standard input, or 0 (a pipe, a terminal).
int64_t stdin_file_size();

// "1m20s", "45s", "2h05m": a duration as a person reads it.
std::string rough_duration(double seconds);

}  // namespace qkv::cli
