#include "qkv/base/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qkv::detail {

std::string format_where(const SourceLocation& loc) {
  // Strip the directory: "src/ops/matmul.cpp:42" reads better than an absolute path.
  const char* file = loc.file_name();
  if (const char* src = std::strstr(file, "/src/")) file = src + 1;
  return concat(file, ":", loc.line());
}

void dcheck_failed(const char* cond, const SourceLocation& loc) noexcept {
  std::fprintf(stderr, "qkv: internal check failed: %s at %s:%u (%s)\n", cond, loc.file_name(),
               static_cast<unsigned>(loc.line()), loc.function_name());
  std::abort();
}

}  // namespace qkv::detail
