// Logging to stderr: one line per message, prefixed with the level. stdout stays free
// for results (translations, scores), as users of command-line MT tools expect.
#pragma once

#include <string_view>

#include "qkv/base/error.h"

namespace qkv {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3, Off = 4 };

// Messages below this level are dropped. Default Info; QKV_LOG_LEVEL=debug|info|warning|error|off.
void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;
// Parses "debug", "info", "warning", "error", "off"; throws ConfigError otherwise.
LogLevel parse_log_level(std::string_view name);

namespace detail {
void write_log_line(LogLevel level, std::string_view message) noexcept;
}

// log(LogLevel::Info, "read ", n, " lines from ", path): thread-safe, whole lines.
template <class... Args>
void log(LogLevel level, const Args&... args) {
  if (level < log_level()) return;
  detail::write_log_line(level, detail::concat(args...));
}

}  // namespace qkv
