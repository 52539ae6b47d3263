#include "qkv/ops/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "detail/checks.h"
#include "detail/indices.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

// Checks logits/targets/options and returns the targets as int32 ids.
std::vector<int32_t> checked_targets(std::string_view op, const TensorView& logits,
                                     const TensorView& targets, const CrossEntropyOptions& o) {
  detail::check_min_rank(op, "logits", logits, 1);
  detail::check_not_empty(op, "logits", logits);
  QKV_CHECK(targets.shape() == logits.shape().without_dim(-1), ShapeError, op, ": targets ",
            describe(targets), " do not match logits ", describe(logits));
  const double eps = o.label_smoothing;
  QKV_CHECK(eps >= 0.0 && eps < 1.0, ValueError, op, ": label_smoothing ", eps,
            " is outside [0, 1)");
  return detail::to_indices(targets, {op, "target", logits.dim(-1), o.ignore_index});
}

kernels::CrossEntropySpec spec_for(const TensorView& logits, const CrossEntropyOptions& o) {
  return {logits.shape().rows(), logits.dim(-1), o.label_smoothing, int32_t(o.ignore_index)};
}

int64_t count_rows(const std::vector<int32_t>& ids, int64_t ignore_index) {
  return std::count_if(ids.begin(), ids.end(), [&](int32_t t) { return t != ignore_index; });
}

}  // namespace

CrossEntropyResult cross_entropy(const TensorView& logits, const TensorView& targets,
                                 const CrossEntropyOptions& options) {
  const std::vector<int32_t> ids = checked_targets("cross_entropy", logits, targets, options);
  const detail::ContiguousInput cx(logits);
  const kernels::CrossEntropySpec spec = spec_for(logits, options);
  CrossEntropyResult r{Tensor::empty(Shape{}, logits.dtype()),
                       Tensor::empty(targets.shape(), logits.dtype()),
                       count_rows(ids, options.ignore_index)};
  detail::visit_dtype(logits.dtype(), [&]<class T>() {
    Tensor row_loss = Tensor::empty(targets.shape(), logits.dtype());
    kern::cross_entropy_forward(cx.data<T>(), ids.data(), row_loss.data<T>(), r.lse.data<T>(),
                                spec);
    // Ignored rows hold 0, so summing all rows equals summing the counted ones.
    const double total = double(kern::sum(row_loss.data<T>(), spec.rows));
    *r.loss.data<T>() = r.counted_rows == 0 ? T(0) : T(total / double(r.counted_rows));
  });
  return r;
}

Tensor cross_entropy_backward(const TensorView& dloss, const TensorView& logits,
                              const TensorView& targets, const TensorView& lse,
                              const CrossEntropyOptions& options) {
  constexpr std::string_view op = "cross_entropy_backward";
  const std::vector<int32_t> ids = checked_targets(op, logits, targets, options);
  QKV_CHECK(dloss.numel() == 1, ShapeError, op, ": dloss ", describe(dloss),
            " must hold one element");
  QKV_CHECK(lse.shape() == targets.shape(), ShapeError, op, ": lse ", describe(lse),
            " does not match targets ", describe(targets));
  detail::check_same_dtype(op, dloss, logits);
  detail::check_same_dtype(op, lse, logits);
  const int64_t counted = count_rows(ids, options.ignore_index);
  const detail::ContiguousInput cx(logits), clse(lse), cdloss(dloss);
  const kernels::CrossEntropySpec spec = spec_for(logits, options);
  Tensor dlogits = Tensor::empty(logits.shape(), logits.dtype());
  detail::visit_dtype(logits.dtype(), [&]<class T>() {
    // d(loss)/d(loss_r) = 1 / counted for every counted row (ignored rows are zeroed by
    // the kernel whatever their upstream value).
    const double per_row = counted == 0 ? 0.0 : double(*cdloss.data<T>()) / double(counted);
    Tensor row_grad = Tensor::full(targets.shape(), per_row, logits.dtype());
    kern::cross_entropy_backward(cx.data<T>(), ids.data(), clse.data<T>(), row_grad.data<T>(),
                                 dlogits.data<T>(), spec);
  });
  return dlogits;
}

}  // namespace qkv::ops
