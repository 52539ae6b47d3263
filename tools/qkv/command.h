// The subcommands of the qkv tool and the one place that turns errors into exit codes.
#pragma once

#include <functional>
#include <string_view>

namespace qkv::tool {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;  // the data, a file, the model, the machine
inline constexpr int kExitUsage = 2;    // a flag, a config file, an inconsistent setting

// Runs `body`; every exception becomes one line "qkv <command>: error: <message>" on
// stderr and an exit code: kExitUsage for qkv::ConfigError (a flag or setting is wrong),
// kExitRuntime for any other error. Nothing escapes (no abort, no stack trace). A field
// error of the library (qkv/base/field_error.h) is shown naming the flags of its fields.
int run_guarded(std::string_view command, const std::function<int()>& body);

// argv[0] is the subcommand's name ("vocab", "train"), as OptionSet::parse expects.
int vocab_main(int argc, const char* const* argv);
int train_main(int argc, const char* const* argv);

}  // namespace qkv::tool
