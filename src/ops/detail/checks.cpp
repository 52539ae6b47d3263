#include "detail/checks.h"

namespace qkv::ops::detail {

ContiguousInput::ContiguousInput(const TensorView& view) : view_(view) {
  // A default-constructed Tensor/TensorView is rank 0 (one element) with no storage.
  QKV_CHECK(view.raw_data() != nullptr || view.numel() == 0, ValueError,
            "an op received an undefined tensor (no storage) of shape ", describe(view));
  if (view.is_contiguous()) return;
  copy_ = Tensor::empty(view.shape(), view.dtype());
  copy_into(view, copy_);
  view_ = copy_.view();
}

void check_same_dtype(std::string_view op, const TensorView& a, const TensorView& b) {
  QKV_CHECK(a.dtype() == b.dtype(), ValueError, op, ": mixed dtypes ", describe(a), " and ",
            describe(b), " (convert one with Tensor::to)");
}

void check_same_shape(std::string_view op, const TensorView& a, const TensorView& b) {
  QKV_CHECK(a.shape() == b.shape(), ShapeError, op, ": shapes differ: ", describe(a), " vs ",
            describe(b));
}

void check_not_empty(std::string_view op, std::string_view name, const TensorView& t) {
  QKV_CHECK(t.numel() > 0, ShapeError, op, ": ", name, " ", describe(t), " is empty");
}

void check_grad_target(std::string_view op, std::string_view name, const GradTarget& t,
                       const TensorView& operand) {
  if (!t.grad.defined()) return;
  QKV_CHECK(t.grad.shape() == operand.shape(), ShapeError, op, ": ", name, " ", describe(t.grad),
            " does not match operand ", describe(operand));
  QKV_CHECK(t.grad.dtype() == operand.dtype(), ValueError, op, ": ", name, " ", describe(t.grad),
            " does not match operand ", describe(operand));
  QKV_CHECK(t.grad.is_contiguous(), ValueError, op, ": ", name, " ", describe(t.grad),
            " is not contiguous");
}

void check_min_rank(std::string_view op, std::string_view name, const TensorView& t, int min_rank) {
  QKV_CHECK(t.rank() >= min_rank, ShapeError, op, ": ", name, " ", describe(t),
            " needs rank >= ", min_rank);
}

}  // namespace qkv::ops::detail
