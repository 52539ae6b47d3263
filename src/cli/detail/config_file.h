// Private: the YAML config file given with -c/--config.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "qkv/cli/options.h"

namespace qkv::cli::detail {

// Reads `path` (a map of long flag names to values: `dim-emb: 256`, `train-sets: [a, b]`)
// and returns each key's option with its checked value, in file order. Throws ConfigError
// naming the file and line for: an unreadable file, a YAML syntax error, a top level that
// is not a map, an unknown or duplicate key, a key that is command-line only, a value of
// the wrong kind (list for a number, ...) or one that the option rejects.
std::vector<std::pair<const Option*, Value>> load_config(const OptionSet& set,
                                                         const std::string& path);

}  // namespace qkv::cli::detail
