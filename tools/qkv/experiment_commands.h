// The subcommands that compare trained systems: compare, report, demo, gradflow. Each takes argv
// with argv[0] the subcommand's name and returns an exit code (command.h).
#pragma once

#include "qkv/experiment/comparison.h"

namespace qkv::tool {

int compare_main(int argc, const char* const* argv);
int report_main(int argc, const char* const* argv);
int demo_main(int argc, const char* const* argv);
// Gradient norms by source position (experiment/gradient_flow.h).
int gradflow_main(int argc, const char* const* argv);

// experiment::run_comparison, then the table and the finding on stdout: compare and demo
// alike. Throws qkv::Error.
int run_and_print_comparison(const experiment::ComparisonSpec& spec);

}  // namespace qkv::tool
