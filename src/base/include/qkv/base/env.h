// Settings read from the environment, strictly: a variable that is set must hold what it
// promises, or the process says so instead of silently running without it.
#pragma once

#include <cstdint>
#include <optional>

namespace qkv {

// The integer in environment variable `name`, nullopt when it is unset. ConfigError
// naming the variable when it is set to anything but a decimal integer in [min, max].
std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max);

}  // namespace qkv
