// Differentiable concat, stack and select. Their backward functions hand out views of dy
// (concat) or add into a slice of the input's gradient (select), so none copies a whole
// sequence per step.
#include <memory>
#include <utility>
#include <vector>

#include "detail/record.h"
#include "qkv/autograd/functions_recurrent.h"
#include "qkv/ops/sequence.h"

namespace qkv::autograd {
namespace {

const OpRegistration kConcat("concat");
const OpRegistration kStack("stack");
const OpRegistration kSelect("select");
const OpRegistration kGatherRows("gather_rows");
const OpRegistration kScatterRows("scatter_rows");

std::vector<TensorView> values_of(const std::vector<Variable>& parts) {
  std::vector<TensorView> views;
  views.reserve(parts.size());
  for (const Variable& p : parts) views.push_back(p.value());
  return views;
}

}  // namespace

namespace detail {
void link_sequence_functions() {}
}  // namespace detail

using detail::accumulate;

Variable concat(const std::vector<Variable>& parts, int axis) {
  Tensor y = ops::concat(values_of(parts), axis);
  const int a = y.shape().axis(axis, "concat axis");
  std::vector<int64_t> sizes;
  for (const Variable& p : parts) sizes.push_back(p.value().dim(a));
  return detail::record(kConcat, y, parts, [parts, sizes, a](const Tensor& dy) {
    std::vector<Tensor> g = ops::concat_backward(dy, sizes, a);
    for (size_t i = 0; i < parts.size(); ++i) accumulate(parts[i], std::move(g[i]));
  });
}

Variable stack(const std::vector<Variable>& parts, int axis) {
  Tensor y = ops::stack(values_of(parts), axis);
  const int a = axis < 0 ? axis + y.rank() : axis;  // the new axis, counted in y
  return detail::record(kStack, y, parts, [parts, a](const Tensor& dy) {
    for (size_t i = 0; i < parts.size(); ++i)
      if (parts[i].requires_grad()) accumulate(parts[i], ops::select(dy, a, int64_t(i)));
  });
}

Variable select(const Variable& x, int axis, int64_t index) {
  Tensor y = ops::select(x.value(), axis, index);
  const int a = x.value().shape().axis(axis, "select axis");
  return detail::record(kSelect, y, {x}, [x, a, index](const Tensor& dy) {
    if (!x.requires_grad()) return;
    // The first step to arrive creates x's (zero) gradient; every step then adds into
    // its own slice in place.
    if (!x.grad().defined()) x.accumulate_grad(Tensor::zeros(x.value().shape(), x.value().dtype()));
    ops::accumulate_select_into(x.grad(), a, index, dy);
  });
}

Variable gather_rows(const Variable& x, std::span<const int64_t> rows) {
  Tensor y = ops::gather_rows(x.value(), rows);
  auto kept = std::make_shared<const std::vector<int64_t>>(rows.begin(), rows.end());
  return detail::record(kGatherRows, y, {x}, [x, kept](const Tensor& dy) {
    if (x.requires_grad()) accumulate(x, ops::scatter_rows(dy, *kept, x.value().dim(0)));
  });
}

Variable scatter_rows(const Variable& x, std::span<const int64_t> rows, int64_t row_count) {
  Tensor y = ops::scatter_rows(x.value(), rows, row_count);
  auto kept = std::make_shared<const std::vector<int64_t>>(rows.begin(), rows.end());
  return detail::record(kScatterRows, y, {x}, [x, kept](const Tensor& dy) {
    if (x.requires_grad()) accumulate(x, ops::gather_rows(dy, *kept));
  });
}

}  // namespace qkv::autograd
