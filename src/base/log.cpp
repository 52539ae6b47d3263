#include "qkv/base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace qkv {
namespace {

LogLevel initial_level() {
  const char* env = std::getenv("QKV_LOG_LEVEL");
  if (env == nullptr) return LogLevel::Info;
  try {
    return parse_log_level(env);
  } catch (const ConfigError&) {
    std::fprintf(stderr,
                 "[qkv warning] ignoring QKV_LOG_LEVEL=%s (use debug|info|warning|error|off)\n",
                 env);
    return LogLevel::Info;
  }
}

std::atomic<LogLevel>& level_slot() {
  static std::atomic<LogLevel> level{initial_level()};
  return level;
}

}  // namespace

void set_log_level(LogLevel level) noexcept {
  level_slot().store(level);
}
LogLevel log_level() noexcept {
  return level_slot().load(std::memory_order_relaxed);
}

LogLevel parse_log_level(std::string_view name) {
  if (name == "debug") return LogLevel::Debug;
  if (name == "info") return LogLevel::Info;
  if (name == "warning") return LogLevel::Warning;
  if (name == "error") return LogLevel::Error;
  if (name == "off") return LogLevel::Off;
  QKV_THROW(ConfigError, "unknown log level '", name, "' (use debug|info|warning|error|off)");
}

namespace detail {

void write_log_line(LogLevel level, std::string_view message) noexcept {
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[qkv %s] %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace detail
}  // namespace qkv
