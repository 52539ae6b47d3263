// The subcommands of the qkv tool, the one place that turns errors into exit codes, and
// the frame every subcommand runs in (flags, --help, errors).
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "qkv/cli/options.h"
#include "qkv/experiment/comparison.h"

namespace qkv::tool {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;  // the data, a file, the model, the machine
inline constexpr int kExitUsage = 2;    // a flag, a config file, an inconsistent setting

// Runs `body`; every exception becomes one line "qkv <command>: error: <message>" on
// stderr and an exit code: kExitUsage for qkv::ConfigError (a flag or setting is wrong),
// kExitRuntime for any other error. Nothing escapes (no abort, no stack trace). A field
// error of the library (qkv/base/field_error.h) is shown naming the flags of its fields.
int run_guarded(std::string_view command, const std::function<int()>& body);

// One subcommand: its flags, what it does with them, and the paragraph `qkv NAME --help`
// prints under its usage line.
struct Subcommand {
  std::string_view name;  // "translate"
  cli::OptionSet (*options)();
  // The work; `args` are the arguments after the command's name, for the command line a
  // result records (compare, demo).
  int (*run)(const cli::ParsedOptions& flags, std::span<const char* const> args);
  std::string_view description;
};

// run_guarded(command.name, ...) around: parse argv (argv[0] the command's name) with
// command.options(); print the help for --help; else run.
int run_subcommand(const Subcommand& command, int argc, const char* const* argv);

// The subcommands, as main.cpp's table lists them. Each takes argv with argv[0] the
// subcommand's name, as OptionSet::parse expects, and returns an exit code.
int vocab_main(int argc, const char* const* argv);
int train_main(int argc, const char* const* argv);
int translate_main(int argc, const char* const* argv);
int score_main(int argc, const char* const* argv);
int eval_main(int argc, const char* const* argv);
int attend_main(int argc, const char* const* argv);
int serve_main(int argc, const char* const* argv);  // the HTTP server (serve_command.cpp)
int compare_main(int argc, const char* const* argv);
int report_main(int argc, const char* const* argv);
int demo_main(int argc, const char* const* argv);
int gradflow_main(int argc, const char* const* argv);  // experiment/gradient_flow.h

// experiment::run_comparison, then the table and the finding on stdout: compare and demo
// alike. Throws qkv::Error.
int run_and_print_comparison(const experiment::ComparisonSpec& spec);

}  // namespace qkv::tool
