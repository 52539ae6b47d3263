// Typed errors for every boundary a user can reach: public ops, files, flags.
//
// Each error carries *what* went wrong (the message, naming shapes, files, lines or
// flags) and *where* it was detected (file:line of the check). Kernels never throw;
// the ops above them validate and throw one of these.
#pragma once

#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace qkv {

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

std::string format_where(const std::source_location& loc);

template <class E, class... Args>
[[noreturn]] void raise(const std::source_location& loc, const Args&... args) {
  throw E(concat(args...), format_where(loc));
}

[[noreturn]] void dcheck_failed(const char* cond, const std::source_location& loc) noexcept;

}  // namespace detail
}  // namespace qkv

// QKV_CHECK(cond, ErrorType, message parts...): throws ErrorType(message) when cond
// is false. Message parts are streamed, e.g.
//   QKV_CHECK(a.cols() == b.rows(), qkv::ShapeError, "matmul: ", a.shape(), " x ", b.shape());
#define QKV_CHECK(cond, ErrorType, ...)                                              \
  do {                                                                               \
    if (!(cond)) [[unlikely]]                                                        \
      ::qkv::detail::raise<ErrorType>(std::source_location::current(), __VA_ARGS__); \
  } while (0)

// QKV_THROW(ErrorType, message parts...): unconditional form of QKV_CHECK.
#define QKV_THROW(ErrorType, ...) \
  ::qkv::detail::raise<ErrorType>(std::source_location::current(), __VA_ARGS__)

// QKV_DCHECK(cond): an internal invariant, checked in debug builds (and in the ci
// preset) only. Prints and aborts: usable inside noexcept kernels.
#if !defined(NDEBUG) || defined(QKV_ENABLE_DCHECK)
#define QKV_DCHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) [[unlikely]]                                               \
      ::qkv::detail::dcheck_failed(#cond, std::source_location::current()); \
  } while (0)
#else
#define QKV_DCHECK(cond) \
  do {                   \
  } while (false && (cond))
#endif
