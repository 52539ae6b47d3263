#include "qkv/ops/softmax.h"

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

// The mask validated against x, with its bias staged contiguously.
struct StagedMask {
  std::optional<detail::ContiguousInput> bias;
  int64_t bias_row_stride = 0;
  const int64_t* valid_lengths = nullptr;

  template <class T>
  kernels::SoftmaxMaskT<T> kernel_mask() const {
    return {valid_lengths, bias ? bias->data<T>() : nullptr, bias_row_stride};
  }
};

StagedMask stage_mask(std::string_view op, const TensorView& x, const SoftmaxMask& mask) {
  StagedMask staged;
  const int64_t rows = x.shape().rows(), cols = x.dim(-1);
  if (!mask.valid_lengths.empty()) {
    QKV_CHECK(int64_t(mask.valid_lengths.size()) == rows, ShapeError, op, ": ",
              mask.valid_lengths.size(), " valid lengths for ", rows, " rows of ", describe(x));
    for (size_t r = 0; r < mask.valid_lengths.size(); ++r)
      QKV_CHECK(mask.valid_lengths[r] >= 0 && mask.valid_lengths[r] <= cols, ValueError, op,
                ": valid length ", mask.valid_lengths[r], " at row ", r, " outside [0, ", cols,
                "] for ", describe(x));
    staged.valid_lengths = mask.valid_lengths.data();
  }
  if (mask.bias) {
    const TensorView& bias = *mask.bias;
    detail::check_same_dtype(op, x, bias);
    const bool one_row = bias.rank() == 1 && bias.dim(0) == cols;
    QKV_CHECK(one_row || bias.shape() == x.shape(), ShapeError, op, ": bias ", describe(bias),
              " is neither [", cols, "] nor the shape of x ", describe(x));
    staged.bias.emplace(bias);
    staged.bias_row_stride = one_row ? 0 : cols;
  }
  return staged;
}

void check_input(std::string_view op, const TensorView& x) {
  detail::check_min_rank(op, "x", x, 1);
  detail::check_not_empty(op, "x", x);
}

void check_backward(std::string_view op, const TensorView& dy, const TensorView& y) {
  check_input(op, y);
  detail::check_same_dtype(op, dy, y);
  detail::check_same_shape(op, dy, y);
}

}  // namespace

Tensor softmax(const TensorView& x, const SoftmaxMask& mask) {
  check_input("softmax", x);
  const StagedMask staged = stage_mask("softmax", x, mask);
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::softmax_rows(cx.data<T>(), y.data<T>(), x.shape().rows(), x.dim(-1),
                       staged.kernel_mask<T>());
  });
  return y;
}

Tensor softmax_backward(const TensorView& dy, const TensorView& y) {
  check_backward("softmax_backward", dy, y);
  const detail::ContiguousInput cdy(dy), cy(y);
  Tensor dx = Tensor::empty(y.shape(), y.dtype());
  detail::visit_dtype(y.dtype(), [&]<class T>() {
    kern::softmax_rows_backward(cy.data<T>(), cdy.data<T>(), dx.data<T>(), y.shape().rows(),
                                y.dim(-1));
  });
  return dx;
}

Tensor log_softmax(const TensorView& x, const SoftmaxMask& mask) {
  check_input("log_softmax", x);
  const StagedMask staged = stage_mask("log_softmax", x, mask);
  const detail::ContiguousInput cx(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    kern::log_softmax_rows(cx.data<T>(), y.data<T>(), x.shape().rows(), x.dim(-1),
                           staged.kernel_mask<T>());
  });
  return y;
}

void log_softmax_in_place(Tensor& x) {
  QKV_CHECK(x.defined(), ValueError, "log_softmax_in_place: x is undefined");
  check_input("log_softmax_in_place", x.view());
  QKV_CHECK(x.is_contiguous(), ShapeError, "log_softmax_in_place: ", describe(x.view()),
            " is not contiguous (use log_softmax, which stages a copy)");
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    // The kernel reads each column before it writes it.
    kern::log_softmax_rows(x.data<T>(), x.data<T>(), x.shape().rows(), x.dim(-1), {});
  });
}

Tensor log_softmax_backward(const TensorView& dy, const TensorView& y) {
  check_backward("log_softmax_backward", dy, y);
  const detail::ContiguousInput cdy(dy), cy(y);
  Tensor dx = Tensor::empty(y.shape(), y.dtype());
  detail::visit_dtype(y.dtype(), [&]<class T>() {
    kern::log_softmax_rows_backward(cy.data<T>(), cdy.data<T>(), dx.data<T>(), y.shape().rows(),
                                    y.dim(-1));
  });
  return dx;
}

}  // namespace qkv::ops
