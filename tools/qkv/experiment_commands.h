// The subcommands that compare trained systems: compare, report, demo, gradflow. Each takes argv
// with argv[0] the subcommand's name and returns an exit code (command.h).
#pragma once

#include <string>
#include <vector>

namespace qkv::tool {

int compare_main(int argc, const char* const* argv);
int report_main(int argc, const char* const* argv);
int demo_main(int argc, const char* const* argv);
// Gradient norms by source position (experiment/gradient_flow.h).
int gradflow_main(int argc, const char* const* argv);

// `qkv compare ARGS` without the error guard (args exclude the program and command
// names): the demo runs a comparison under its own name. Throws qkv::Error.
int run_compare(const std::vector<std::string>& args);

}  // namespace qkv::tool
