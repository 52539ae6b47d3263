#include "qkv/ops/normalize.h"

#include <algorithm>
#include <cmath>

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

void check_eps(std::string_view op, double eps) {
  QKV_CHECK(std::isfinite(eps) && eps > 0, ValueError, op, ": eps ", eps,
            " must be finite and > 0");
}

void check_input(std::string_view op, const TensorView& x) {
  detail::check_min_rank(op, "x", x, 1);
  detail::check_not_empty(op, "x", x);
}

}  // namespace

Tensor l2_normalize(const TensorView& x, double eps) {
  check_input("l2_normalize", x);
  check_eps("l2_normalize", eps);
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  const int64_t d = x.dim(-1), rows = x.shape().rows();
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    const T* xp = cx.data<T>();
    T* yp = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      // n = max(|x_r|, eps); the sum of squares goes through the (SIMD) dot kernel.
      const double n = std::max(std::sqrt(double(kern::dot(xp + r * d, xp + r * d, d))), eps);
      kern::scale(xp + r * d, 1.0 / n, yp + r * d, d);
    }
  });
  return y;
}

Tensor l2_normalize_backward(const TensorView& dy, const TensorView& x, double eps) {
  check_input("l2_normalize_backward", x);
  check_eps("l2_normalize_backward", eps);
  detail::check_same_dtype("l2_normalize_backward", dy, x);
  detail::check_same_shape("l2_normalize_backward", dy, x);
  const detail::ContiguousInput cdy(dy), cx(x);
  Tensor dx = Tensor::empty(x.shape(), x.dtype());
  const int64_t d = x.dim(-1), rows = x.shape().rows();
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    const T *xp = cx.data<T>(), *gp = cdy.data<T>();
    T* out = dx.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T *xr = xp + r * d, *gr = gp + r * d;
      const double norm = std::sqrt(double(kern::dot(xr, xr, d)));
      if (norm < eps) {  // forward divided by the constant eps: a plain scaling
        kern::scale(gr, 1.0 / eps, out + r * d, d);
        continue;
      }
      // dx = dy / n − x (x·dy) / n³
      const double radial = double(kern::dot(xr, gr, d)) / (norm * norm * norm);
      kern::scale(gr, 1.0 / norm, out + r * d, d);
      kern::axpy(-radial, xr, out + r * d, d);
    }
  });
  return dx;
}

}  // namespace qkv::ops
