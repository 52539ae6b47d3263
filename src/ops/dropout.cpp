#include "qkv/ops/dropout.h"

#include <optional>
#include <string_view>
#include <type_traits>

#include "detail/checks.h"
#include "detail/kernel_select.h"
#include "qkv/kernels/dropout.h"

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

namespace {
// dropout(x) with its mask recorded into `mask`, plus the residual when there is one (op
// names the caller: dropout or dropout_add).
Tensor recorded_dropout(std::string_view op, const TensorView* residual, const TensorView& x,
                        const DropoutOptions& options, DropoutMask& mask) {
  const kernels::DropoutSpec spec = checked_spec(op, options);
  std::optional<detail::ContiguousInput> cr;
  if (residual) {
    detail::check_same_dtype(op, *residual, x);
    QKV_CHECK(residual->shape() == x.shape(), ShapeError, op, ": residual ", describe(*residual),
              " and x ", describe(x), " differ in shape");
    cr.emplace(*residual);
  }
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  mask.numel = x.numel();
  mask.p = options.p;
  mask.keep.resize(size_t(kernels::ref::dropout_keep_bytes(mask.numel)));
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    const T* r = cr ? cr->data<T>() : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (r)
        kernels::dropout_add_forward_keep(r, cx.data<T>(), y.data<T>(), mask.numel, spec,
                                          mask.keep.data());
      else
        kernels::dropout_forward_keep(cx.data<T>(), y.data<T>(), mask.numel, spec,
                                      mask.keep.data());
    } else {
      if (r)
        kernels::ref::dropout_add_forward_keep(r, cx.data<T>(), y.data<T>(), mask.numel, spec,
                                               mask.keep.data());
      else
        kernels::ref::dropout_forward_keep(cx.data<T>(), y.data<T>(), mask.numel, spec,
                                           mask.keep.data());
    }
  });
  return y;
}
}  // namespace

Tensor dropout(const TensorView& x, const DropoutOptions& options, DropoutMask& mask) {
  return recorded_dropout("dropout", nullptr, x, options, mask);
}

Tensor dropout_add(const TensorView& residual, const TensorView& x, const DropoutOptions& options,
                   DropoutMask& mask) {
  return recorded_dropout("dropout_add", &residual, x, options, mask);
}

Tensor dropout_backward_recorded(const TensorView& dy, const DropoutMask& mask) {
  QKV_CHECK(dy.numel() == mask.numel &&
                int64_t(mask.keep.size()) == kernels::ref::dropout_keep_bytes(mask.numel),
            ShapeError, "dropout_backward_recorded: dy ", describe(dy), " has ", dy.numel(),
            " elements, the recorded mask ", mask.numel);
  const detail::ContiguousInput cdy(dy);
  Tensor dx = Tensor::empty(dy.shape(), dy.dtype());
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float>)
      kernels::dropout_backward_keep(cdy.data<T>(), dx.data<T>(), mask.numel, mask.p,
                                     mask.keep.data());
    else
      kernels::ref::dropout_backward_keep(cdy.data<T>(), dx.data<T>(), mask.numel, mask.p,
                                          mask.keep.data());
  });
  return dx;
}

}  // namespace qkv::ops
