// The names of all differentiable functions. Each function's .cpp registers its name with
// a static OpRegistration; the tests enumerate registered_ops() and fail for any op that
// has no gradient-check case, so a new op cannot ship without one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qkv::autograd {

class OpRegistration {
 public:
  explicit OpRegistration(std::string_view name);
  std::string_view name() const noexcept { return name_; }

 private:
  std::string_view name_;  // a string literal: lives for the program
};

// Sorted, unique names ("add", "matmul", ...). Links in every function file.
std::vector<std::string> registered_ops();

}  // namespace qkv::autograd
