// The flags of `qkv compare` and the ComparisonSpec they give: compare's own flags
// (defaulted from ComparisonSpec) beside every `qkv train` flag, parsed once by one
// OptionSet. Library code beside train_flags.h, so that a second front end parses the same
// flags into the same spec.
#pragma once

#include "qkv/cli/options.h"
#include "qkv/experiment/comparison.h"

namespace qkv::experiment {

// compare's own flags (what `qkv compare --help` lists).
void declare_comparison_options(cli::OptionSet& o);
// What `qkv compare` parses: `qkv train`'s flags (--model optional, to be refused) and
// compare's own.
cli::OptionSet comparison_options();

// The spec the flags give; `command` is recorded for the notes. ConfigError naming the
// flag for --model, --type, --attention or --resume (compare sets them per variant), a
// list flag without exactly two files, and a bad --variants list.
ComparisonSpec comparison_spec_from(const cli::ParsedOptions& p, std::string command);

}  // namespace qkv::experiment
