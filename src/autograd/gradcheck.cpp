#include "qkv/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

namespace qkv::autograd {
namespace {

double scalar_of(const Variable& y) {
  QKV_CHECK(y.defined() && y.value().numel() == 1, ShapeError,
            "gradcheck: the function must return one element, got ",
            y.defined() ? describe(y.value()) : std::string("an undefined Variable"));
  return *y.value().data<double>();
}

std::vector<Variable> leaf_copies(const std::vector<Tensor>& inputs) {
  std::vector<Variable> vars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    QKV_CHECK(inputs[i].defined() && inputs[i].dtype() == DType::F64, ValueError,
              "gradcheck: input ", i, " must be a defined f64 tensor, got ",
              inputs[i].defined() ? describe(inputs[i]) : std::string("undefined"));
    vars.emplace_back(inputs[i].clone(), true);  // a copy: we perturb it in place
  }
  return vars;
}

// (f(x + h e_j) − f(x − h e_j)) / 2h for element j of input `value`.
double central_difference(const ScalarFunction& f, const std::vector<Variable>& vars,
                          double* element, double h) {
  const double saved = *element;
  *element = saved + h;
  const double plus = scalar_of(f(vars));
  *element = saved - h;
  const double minus = scalar_of(f(vars));
  *element = saved;
  return (plus - minus) / (2 * h);
}

void describe_result(GradcheckReport& r) {
  std::ostringstream os;
  if (r.passed) {
    os << "ok: " << r.elements_checked << " elements, max abs error " << r.max_abs_error;
  } else {
    os << "gradient mismatch at input " << r.failed_input << " element " << r.failed_element
       << ": analytic " << r.analytic << " vs numeric " << r.numeric << " (max abs error "
       << r.max_abs_error << ")";
  }
  r.message = os.str();
}

}  // namespace

GradcheckReport gradcheck(const ScalarFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  std::vector<Variable> vars = leaf_copies(inputs);
  clear_tape();
  backward(f(vars));

  GradcheckReport report;
  double worst_excess = 0.0;
  const NoGradGuard no_grad;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor& value = vars[i].value();
    const Tensor& grad = vars[i].grad();  // undefined: f does not depend on this input
    for (int64_t j = 0; j < value.numel(); ++j) {
      const double analytic = grad.defined() ? grad.data<double>()[j] : 0.0;
      const double numeric = central_difference(f, vars, value.data<double>() + j, options.eps);
      const double error = std::abs(analytic - numeric);
      const double excess = error - (options.atol + options.rtol * std::abs(numeric));
      ++report.elements_checked;
      report.max_abs_error = std::max(report.max_abs_error, error);
      if (excess > worst_excess || std::isnan(error)) {
        worst_excess = std::isnan(error) ? INFINITY : excess;
        report.passed = false;
        report.failed_input = int(i);
        report.failed_element = j;
        report.analytic = analytic;
        report.numeric = numeric;
      }
    }
  }
  describe_result(report);
  return report;
}

}  // namespace qkv::autograd
