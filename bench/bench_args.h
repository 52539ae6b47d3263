// Command-line handling shared by the standalone bench mains (qkv_bench_attention,
// qkv_bench_training, qkv_bench_decode): the same contract as the qkv CLI, so a typo gets one line
// on stderr and exit status 2 instead of an abort from an uncaught exception, and --help prints the
// usage and exits 0. bench/tests/args.cmake checks this from ctest.
#pragma once

#include <charconv>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>

#include "qkv/base/error.h"
#include "qkv/kernels/dispatch.h"

namespace qkv::bench {

// The whole of `text` as an integer >= min; ConfigError naming `what` otherwise.
inline long long parse_int(std::string_view text, std::string_view what, long long min) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  QKV_CHECK(ec == std::errc() && end == text.data() + text.size() && !text.empty(), ConfigError,
            what, ": '", text, "' is not an integer");
  QKV_CHECK(v >= min, ConfigError, what, ": ", v, " is below the minimum ", min);
  return v;
}

// The whole of `text` as a finite number >= 0; ConfigError naming `what` otherwise.
inline double parse_seconds(std::string_view text, std::string_view what) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  QKV_CHECK(
      ec == std::errc() && end == text.data() + text.size() && !text.empty() && v >= 0 && v < 1e9,
      ConfigError, what, ": '", text, "' is not a number of seconds");
  return v;
}

// argv[i + 1] as the value of flag argv[i] (advancing i); ConfigError when it is missing.
inline std::string_view flag_value(int argc, char** argv, int& i) {
  QKV_CHECK(i + 1 < argc, ConfigError, argv[i], ": missing value");
  return argv[++i];
}

// The Highway bits of qkv's SIMD target named `name` (AVX3, AVX2, SCALAR, ...: the
// targets this CPU runs, kernels::simd_targets()), for kernels::force_simd_target; a
// ConfigError naming `what` and listing them otherwise. Lets one machine measure the
// code paths of a smaller CPU (--simd AVX2 on an AVX-512 machine).
inline int64_t parse_simd_target(std::string_view name, std::string_view what) {
  std::string names;
  for (const kernels::SimdTarget& t : kernels::simd_targets()) {
    if (t.name == name) return t.bits;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  QKV_THROW(ConfigError, what, " ", name, ": not a SIMD target of this CPU (", names, ")");
}

// Runs body() and turns any exception into one line on stderr and exit status 2.
template <class Body>
int guarded_main(const char* program, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", program, e.what(), program);
    return 2;
  }
}

}  // namespace qkv::bench
