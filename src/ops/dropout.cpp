#include "qkv/ops/dropout.h"

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

kernels::DropoutSpec checked_spec(std::string_view op, const DropoutOptions& o) {
  QKV_CHECK(o.p >= 0.0 && o.p < 1.0, ValueError, op, ": p ", o.p, " is outside [0, 1)");
  return {o.p, CounterRng(o.seed, o.stream), o.offset};
}

}  // namespace

Tensor dropout(const TensorView& x, const DropoutOptions& options) {
  const kernels::DropoutSpec spec = checked_spec("dropout", options);
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::dropout_forward(cx.data<T>(), y.data<T>(), x.numel(), spec);
  });
  return y;
}

Tensor dropout_backward(const TensorView& dy, const DropoutOptions& options) {
  const kernels::DropoutSpec spec = checked_spec("dropout_backward", options);
  const detail::ContiguousInput cdy(dy);
  Tensor dx = Tensor::empty(dy.shape(), dy.dtype());
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    kern::dropout_backward(cdy.data<T>(), dx.data<T>(), dy.numel(), spec);
  });
  return dx;
}

}  // namespace qkv::ops
