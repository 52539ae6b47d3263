// Typed errors for every boundary a user can reach: public ops, files, flags.
//
// Each error carries *what* went wrong (the message, naming shapes, files, lines or
// flags) and *where* it was detected (file:line of the check). Kernels never throw;
// the ops above them validate and throw one of these.
#pragma once

#include <cstdint>
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace qkv {

// Where a check sits in the source. std::source_location where the standard library
// provides it; clang before 15 lacks the builtin libstdc++'s <source_location> needs
// (the fuzz preset builds with clang 14), so there the same accessors come from the
// __builtin_FILE/LINE/FUNCTION that both compilers have.
#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
class SourceLocation {
 public:
  // The default arguments are evaluated at the caller, as for std::source_location.
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          std::uint_least32_t line = __builtin_LINE(),
                                          const char* function = __builtin_FUNCTION()) noexcept {
    SourceLocation loc;
    loc.file_ = file;
    loc.line_ = line;
    loc.function_ = function;
    return loc;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr const char* function_name() const noexcept { return function_; }

 private:
  const char* file_ = "";
  std::uint_least32_t line_ = 0;
  const char* function_ = "";
};
#endif

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, std::string where)
      : std::runtime_error(what), where_(std::move(where)) {}
  // "file.cpp:123" of the check that raised it.
  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

// Tensor shapes that do not fit together (the message names both shapes).
class ShapeError : public Error {
  using Error::Error;
};
// An argument with a bad value: NaN where an index is needed, p outside [0, 1), ...
class ValueError : public Error {
  using Error::Error;
};
// An index outside its range (embedding id >= vocab size, ...).
class IndexError : public Error {
  using Error::Error;
};
// Reading or writing a file failed or the file is malformed (names the file).
class IoError : public Error {
  using Error::Error;
};
// A flag or configuration value is invalid (names the flag).
class ConfigError : public Error {
  using Error::Error;
};
// A request for more memory than is sensible or available.
class ResourceError : public Error {
  using Error::Error;
};
// A broken internal invariant: a bug in qkv, not in the caller's input.
class InternalError : public Error {
  using Error::Error;
};

namespace detail {

template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

std::string format_where(const SourceLocation& loc);

template <class E, class... Args>
[[noreturn]] void raise(const SourceLocation& loc, const Args&... args) {
  throw E(concat(args...), format_where(loc));
}

[[noreturn]] void dcheck_failed(const char* cond, const SourceLocation& loc) noexcept;

}  // namespace detail
}  // namespace qkv

// QKV_CHECK(cond, ErrorType, message parts...): throws ErrorType(message) when cond
// is false. Message parts are streamed, e.g.
//   QKV_CHECK(a.cols() == b.rows(), qkv::ShapeError, "matmul: ", a.shape(), " x ", b.shape());
#define QKV_CHECK(cond, ErrorType, ...)                                               \
  do {                                                                                \
    if (!(cond)) [[unlikely]]                                                         \
      ::qkv::detail::raise<ErrorType>(::qkv::SourceLocation::current(), __VA_ARGS__); \
  } while (0)

// QKV_THROW(ErrorType, message parts...): unconditional form of QKV_CHECK.
#define QKV_THROW(ErrorType, ...) \
  ::qkv::detail::raise<ErrorType>(::qkv::SourceLocation::current(), __VA_ARGS__)

// QKV_DCHECK(cond): an internal invariant, checked in debug builds (and in the ci
// preset) only. Prints and aborts: usable inside noexcept kernels.
#if !defined(NDEBUG) || defined(QKV_ENABLE_DCHECK)
#define QKV_DCHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) [[unlikely]]                                                \
      ::qkv::detail::dcheck_failed(#cond, ::qkv::SourceLocation::current()); \
  } while (0)
#else
#define QKV_DCHECK(cond) \
  do {                   \
  } while (false && (cond))
#endif
