// Loader for the PyTorch golden fixtures in tests/fixtures/attention (written by
// tools/make_attention_fixtures.py). Test-only code.
//
// Format: plain text, one tensor per line,
//     name dim0 dim1 ... : v0 v1 ...
// dims are non-negative ints (none for a scalar), values row-major decimal floats ("inf",
// "-inf", "nan" allowed). Lines starting with '#' (after optional blanks) are comments;
// blank lines are ignored. Names are unique within a file.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "qkv/tensor/tensor.h"

namespace qkv::attention::testing {

using Fixture = std::map<std::string, Tensor>;

// Parses fixture text; every tensor is F64. `source` names the text in errors. Malformed
// input (missing ':', bad dim or value token, value count != product of dims, duplicate
// or missing name) raises IoError whose message starts with "source:line: ".
Fixture parse_fixture(std::string_view text, const std::string& source);

// Reads and parses a file. IoError (naming the path) when it cannot be read.
Fixture load_fixture(const std::string& path);

// fixture.at(name) with an IoError naming the missing tensor and the source.
const Tensor& fixture_tensor(const Fixture& fixture, const std::string& name,
                             const std::string& source);

}  // namespace qkv::attention::testing
