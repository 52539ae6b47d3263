// Gradient check: the analytical gradient (backward through the float64 reference
// kernels) against central differences (f(x + h) − f(x − h)) / 2h, element by element.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "qkv/autograd/variable.h"

namespace qkv::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // h of the central difference
  double atol = 1e-5;  // an element passes when |analytic − numeric| <= atol + rtol·|numeric|
  double rtol = 1e-3;
};

struct GradcheckReport {
  bool passed = true;
  int64_t elements_checked = 0;
  double max_abs_error = 0.0;  // max |analytic − numeric| over all elements
  // The element that exceeded its tolerance by the most (-1 when all passed).
  int failed_input = -1;
  int64_t failed_element = -1;  // flat row-major index into that input
  double analytic = 0.0, numeric = 0.0;
  std::string message;  // one line: "ok ..." or what failed, for test output
};

// f maps Variables (one per input, requiring grad) to a one-element Variable. inputs must
// be F64 (else ValueError). Runs f once with recording and backward(), then 2 evaluations
// per input element under NoGradGuard. Uses (and clears) the calling thread's tape.
using ScalarFunction = std::function<Variable(const std::vector<Variable>&)>;
GradcheckReport gradcheck(const ScalarFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace qkv::autograd
