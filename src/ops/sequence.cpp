#include "qkv/ops/sequence.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "detail/checks.h"
#include "detail/kernel_select.h"
#include "qkv/base/thread_pool.h"

namespace qkv::ops {
namespace {

// A row-major tensor seen as [outer, D, inner] around `axis`.
struct AxisSplit {
  int64_t outer = 1, dim = 1, inner = 1;
};

AxisSplit split_at(const Shape& s, int axis) {
  AxisSplit a;
  for (int i = 0; i < axis; ++i) a.outer *= s[i];
  a.dim = s[axis];
  for (int i = axis + 1; i < s.rank(); ++i) a.inner *= s[i];
  return a;
}

Shape insert_dim(const Shape& s, int axis, int64_t d) {
  Shape out;
  for (int i = 0; i <= s.rank(); ++i) {
    if (i == axis) out.push_back(d);
    if (i < s.rank()) out.push_back(s[i]);
  }
  return out;
}

// Copies the contiguous `part`, seen as [outer, d, inner], into columns [offset, offset + d)
// of the contiguous `out` seen as [outer, D, inner]: one memcpy per outer index.
void copy_block(const TensorView& part, const Tensor& out, const AxisSplit& o, int64_t d,
                int64_t offset) {
  const auto elem = int64_t(dtype_size(out.dtype()));
  const auto* src = static_cast<const char*>(part.raw_data());
  auto* dst = static_cast<char*>(out.view().raw_data());
  const int64_t block = d * o.inner * elem;
  if (block == 0) return;
  for (int64_t k = 0; k < o.outer; ++k)
    std::memcpy(dst + (k * o.dim + offset) * o.inner * elem, src + k * block, size_t(block));
}

void check_parts(std::string_view op, std::span<const TensorView> parts) {
  QKV_CHECK(!parts.empty(), ValueError, op, ": needs at least one tensor");
  for (size_t i = 1; i < parts.size(); ++i) detail::check_same_dtype(op, parts[0], parts[i]);
}

void check_rows(std::string_view op, std::span<const int64_t> rows, int64_t row_count) {
  for (size_t i = 0; i < rows.size(); ++i)
    QKV_CHECK(rows[i] >= 0 && rows[i] < row_count && (i == 0 || rows[i] > rows[i - 1]), IndexError,
              op, ": rows[", i, "] = ", rows[i], " is not in [",
              i == 0 ? int64_t{0} : rows[i - 1] + 1, ", ", row_count,
              ") (rows must be strictly increasing row indices)");
}

// Bytes of one row (axis 0) of x.
int64_t row_bytes(const TensorView& x) {
  return x.dim(0) == 0 ? 0 : x.numel() / x.dim(0) * int64_t(dtype_size(x.dtype()));
}

// Copies row pairs (to_row(i), from_row(i)) of `width` bytes for i in [0, n), split over
// the pool in blocks of about 64 KiB: a copy per element never changes a result.
template <class ToRow, class FromRow>
void copy_rows(const void* from, void* to, int64_t n, int64_t width, ToRow to_row,
               FromRow from_row) {
  if (width == 0) return;
  const auto* src = static_cast<const char*>(from);
  auto* dst = static_cast<char*>(to);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / width);
  parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      std::memcpy(dst + to_row(i) * width, src + from_row(i) * width, size_t(width));
  });
}

}  // namespace

Tensor concat(std::span<const TensorView> parts, int axis) {
  check_parts("concat", parts);
  detail::check_min_rank("concat", "parts[0]", parts[0], 1);
  const int a = parts[0].shape().axis(axis, "concat axis");
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const TensorView& p = parts[i];
    QKV_CHECK(
        p.rank() == parts[0].rank() && p.shape().with_dim(a, 0) == parts[0].shape().with_dim(a, 0),
        ShapeError, "concat: part ", i, " ", describe(p), " does not match part 0 ",
        describe(parts[0]), " outside axis ", a);
    total += p.dim(a);
  }
  Tensor out = Tensor::empty(parts[0].shape().with_dim(a, total), parts[0].dtype());
  const AxisSplit o = split_at(out.shape(), a);
  int64_t offset = 0;
  for (const TensorView& p : parts) {
    const detail::ContiguousInput cp(p);
    copy_block(cp.view(), out, o, p.dim(a), offset);
    offset += p.dim(a);
  }
  return out;
}

std::vector<Tensor> concat_backward(const Tensor& dy, std::span<const int64_t> sizes, int axis) {
  detail::check_min_rank("concat_backward", "dy", dy, 1);
  const int a = dy.shape().axis(axis, "concat_backward axis");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  QKV_CHECK(total == dy.dim(a), ShapeError, "concat_backward: part sizes sum to ", total,
            " but dy ", describe(dy), " has ", dy.dim(a), " along axis ", a);
  std::vector<Tensor> grads;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    grads.push_back(dy.slice(a, offset, offset + s));
    offset += s;
  }
  return grads;
}

Tensor stack(std::span<const TensorView> parts, int axis) {
  check_parts("stack", parts);
  const Shape& s = parts[0].shape();
  QKV_CHECK(axis >= -s.rank() - 1 && axis <= s.rank(), ShapeError, "stack: axis ", axis,
            " out of range for parts of shape ", s);
  const int a = axis < 0 ? axis + s.rank() + 1 : axis;
  for (size_t i = 1; i < parts.size(); ++i)
    QKV_CHECK(parts[i].shape() == s, ShapeError, "stack: part ", i, " ", describe(parts[i]),
              " differs from part 0 ", describe(parts[0]));
  Tensor out = Tensor::empty(insert_dim(s, a, int64_t(parts.size())), parts[0].dtype());
  const AxisSplit o = split_at(out.shape(), a);
  for (size_t i = 0; i < parts.size(); ++i) {
    const detail::ContiguousInput cp(parts[i]);
    copy_block(cp.view(), out, o, 1, int64_t(i));
  }
  return out;
}

std::vector<Tensor> stack_backward(const Tensor& dy, int axis) {
  detail::check_min_rank("stack_backward", "dy", dy, 1);
  const int a = dy.shape().axis(axis, "stack_backward axis");
  std::vector<Tensor> grads;
  for (int64_t i = 0; i < dy.dim(a); ++i) grads.push_back(select(dy, a, i));
  return grads;
}

Tensor select(const Tensor& x, int axis, int64_t index) {
  QKV_CHECK(x.defined(), ValueError, "select: x is an undefined tensor");
  detail::check_min_rank("select", "x", x, 1);
  const int a = x.shape().axis(axis, "select axis");
  QKV_CHECK(index >= 0 && index < x.dim(a), IndexError, "select: index ", index,
            " out of range [0, ", x.dim(a), ") for axis ", a, " of ", describe(x));
  // A one-wide slice is contiguous exactly when what it skips is only along outer dims
  // of size 1; then dropping the axis is a reshape (a view), else one copy.
  return x.slice(a, index, index + 1).contiguous().reshape(x.shape().without_dim(a));
}

Tensor select_backward(const TensorView& dy, const Shape& x_shape, int axis, int64_t index) {
  QKV_CHECK(x_shape.rank() >= 1, ShapeError, "select_backward: x shape ", x_shape,
            " needs rank >= 1");
  const int a = x_shape.axis(axis, "select_backward axis");
  QKV_CHECK(dy.shape() == x_shape.without_dim(a), ShapeError, "select_backward: dy ", describe(dy),
            " does not match x ", x_shape, " without axis ", a);
  Tensor dx = Tensor::zeros(x_shape, dy.dtype());
  accumulate_select_into(dx, a, index, dy);
  return dx;
}

void accumulate_select_into(const Tensor& dst, int axis, int64_t index, const TensorView& src) {
  detail::check_min_rank("accumulate_select_into", "dst", dst, 1);
  detail::check_same_dtype("accumulate_select_into", dst, src);
  const int a = dst.shape().axis(axis, "accumulate_select_into axis");
  QKV_CHECK(index >= 0 && index < dst.dim(a), IndexError, "accumulate_select_into: index ", index,
            " out of range [0, ", dst.dim(a), ") for axis ", a, " of ", describe(dst));
  QKV_CHECK(src.shape() == dst.shape().without_dim(a), ShapeError, "accumulate_select_into: src ",
            describe(src), " does not match dst ", describe(dst), " without axis ", a);
  QKV_CHECK(dst.is_contiguous(), ValueError, "accumulate_select_into: destination ", describe(dst),
            " is not contiguous");
  const detail::ContiguousInput cs(src);
  const AxisSplit o = split_at(dst.shape(), a);
  // Rows split over the pool (a stacked projection's parts are [B·T] rows of E: one
  // thread alone would leave the others waiting); each element is one add, so the
  // split never changes a result.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, o.inner));
  detail::visit_dtype(dst.dtype(), [&]<class T>() {
    parallel_for(0, o.outer, grain, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k)
        kern::axpy(1.0, cs.data<T>() + k * o.inner, dst.data<T>() + (k * o.dim + index) * o.inner,
                   o.inner);
    });
  });
}

Tensor gather_rows(const TensorView& x, std::span<const int64_t> rows) {
  detail::check_min_rank("gather_rows", "x", x, 1);
  check_rows("gather_rows", rows, x.dim(0));
  const detail::ContiguousInput cx(x);
  Tensor out = Tensor::empty(x.shape().with_dim(0, int64_t(rows.size())), x.dtype());
  const int64_t width = row_bytes(x);
  copy_rows(
      cx.view().raw_data(), out.view().raw_data(), int64_t(rows.size()), width,
      [](int64_t i) { return i; }, [rows](int64_t i) { return rows[size_t(i)]; });
  return out;
}

Tensor scatter_rows(const TensorView& x, std::span<const int64_t> rows, int64_t row_count) {
  detail::check_min_rank("scatter_rows", "x", x, 1);
  QKV_CHECK(x.dim(0) == int64_t(rows.size()), ShapeError, "scatter_rows: x ", describe(x), " has ",
            x.dim(0), " rows for ", rows.size(), " row indices");
  QKV_CHECK(row_count >= 0, ShapeError, "scatter_rows: row_count ", row_count, " is negative");
  check_rows("scatter_rows", rows, row_count);
  const detail::ContiguousInput cx(x);
  Tensor out = Tensor::zeros(x.shape().with_dim(0, row_count), x.dtype());
  const int64_t width = row_bytes(x);
  copy_rows(
      cx.view().raw_data(), out.view().raw_data(), int64_t(rows.size()), width,
      [rows](int64_t i) { return rows[size_t(i)]; }, [](int64_t i) { return i; });
  return out;
}

}  // namespace qkv::ops
