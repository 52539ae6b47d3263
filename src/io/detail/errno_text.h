// The text every io error gives for an errno value ("No space left on device").
#pragma once

#include <string>
#include <system_error>

namespace qkv::io::detail {

inline std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

}  // namespace qkv::io::detail
