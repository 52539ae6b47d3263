// Private helpers shared by the op implementations: argument checks with messages that
// name the op and the shapes, contiguous staging of strided inputs, dtype dispatch.
#pragma once

#include <string_view>
#include <utility>

#include "qkv/base/error.h"
#include "qkv/ops/grad_target.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops::detail {

// A contiguous version of `view`: the view itself when it already is contiguous, else
// a packed copy owned by this object. Kernels read raw pointers, so strided views are
// staged here once instead of every kernel learning about strides. Every op reads its
// inputs through this class, so it also rejects undefined tensors (ValueError).
class ContiguousInput {
 public:
  explicit ContiguousInput(const TensorView& view);
  const TensorView& view() const noexcept { return view_; }
  template <class T>
  const T* data() const {
    return view_.data<T>();
  }

 private:
  Tensor copy_;
  TensorView view_;
};

// ValueError unless a and b hold the same dtype (qkv never converts implicitly).
void check_same_dtype(std::string_view op, const TensorView& a, const TensorView& b);
// ShapeError unless a and b have equal shapes; the message names both.
void check_same_shape(std::string_view op, const TensorView& a, const TensorView& b);
// ShapeError when `t` has no elements (an op for which "empty" has no meaning).
void check_not_empty(std::string_view op, std::string_view name, const TensorView& t);
// ShapeError unless t.rank() >= min_rank.
void check_min_rank(std::string_view op, std::string_view name, const TensorView& t, int min_rank);
// For a defined target: ShapeError / ValueError unless it matches `operand`'s shape / dtype,
// ValueError unless it is contiguous.
void check_grad_target(std::string_view op, std::string_view name, const GradTarget& target,
                       const TensorView& operand);

// Calls fn.template operator()<float>() or <double>() for the dtype: F32 runs the fast
// kernels, F64 the reference twins (see kernel_select.h).
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::F64) return std::forward<Fn>(fn).template operator()<double>();
  return std::forward<Fn>(fn).template operator()<float>();
}

}  // namespace qkv::ops::detail
