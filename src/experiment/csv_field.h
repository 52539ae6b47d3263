// Private to the experiment's CSV writers (results.csv, gradient_flow.csv).
#pragma once

#include <string>

namespace qkv::experiment::detail {

// `s` as one CSV field (RFC 4180): as is unless it holds a comma, a quote or a line
// break; then quoted, with each quote doubled.
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace qkv::experiment::detail
