#include "qkv/tensor/tensor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "qkv/base/aligned.h"
#include "qkv/base/thread_pool.h"

namespace qkv {

// ---- TensorView ----------------------------------------------------------------------

TensorView::TensorView(void* data, const Shape& shape, DType dtype)
    : TensorView(data, shape, contiguous_strides(shape), dtype) {}

TensorView::TensorView(void* data, const Shape& shape, const Strides& strides, DType dtype)
    : data_(data), shape_(shape), strides_(strides), dtype_(dtype) {}

bool TensorView::is_contiguous() const noexcept {
  int64_t expected = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[size_t(i)] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

int64_t TensorView::offset_of(std::initializer_list<int64_t> index) const {
  QKV_CHECK(int(index.size()) == rank(), IndexError, "index of rank ", index.size(),
            " into tensor ", describe(*this));
  int64_t offset = 0;
  int i = 0;
  for (int64_t v : index) {
    QKV_CHECK(v >= 0 && v < shape_[i], IndexError, "index ", v, " out of range for dim ", i,
              " of tensor ", describe(*this));
    offset += v * strides_[size_t(i++)];
  }
  return offset;
}

TensorView TensorView::transpose(int a, int b) const {
  a = shape_.axis(a, "transpose axis");
  b = shape_.axis(b, "transpose axis");
  TensorView v = *this;
  const int64_t da = shape_[a], db = shape_[b];
  v.shape_ = shape_.with_dim(a, db).with_dim(b, da);
  std::swap(v.strides_[size_t(a)], v.strides_[size_t(b)]);
  return v;
}

TensorView TensorView::slice(int axis, int64_t begin, int64_t end) const {
  const int a = shape_.axis(axis, "slice axis");
  QKV_CHECK(0 <= begin && begin <= end && end <= shape_[a], IndexError, "slice [", begin, ", ", end,
            ") out of range for dim ", a, " of tensor ", describe(*this));
  TensorView v = *this;
  v.shape_ = shape_.with_dim(a, end - begin);
  v.data_ = static_cast<char*>(data_) + begin * strides_[size_t(a)] * int64_t(dtype_size(dtype_));
  return v;
}

TensorView TensorView::reshape(const Shape& shape) const {
  QKV_CHECK(shape.numel() == numel(), ShapeError, "cannot reshape ", describe(*this), " to ", shape,
            ": element counts differ");
  QKV_CHECK(is_contiguous(), ShapeError, "cannot reshape non-contiguous ", describe(*this),
            " (call contiguous() first)");
  return TensorView(data_, shape, dtype_);
}

// ---- Tensor --------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  const int64_t n = shape.numel();
  const size_t bytes = detail::checked_array_bytes(size_t(n), dtype_size(dtype));
  // Never a null storage, so even a 0-element tensor is defined().
  std::shared_ptr<void> storage(aligned_alloc_bytes(bytes > 0 ? bytes : 1), AlignedDeleter{});
  void* data = storage.get();
  return Tensor(std::move(storage), TensorView(data, shape, dtype));
}

Tensor Tensor::adopt(std::shared_ptr<void> owner, const TensorView& view) {
  QKV_CHECK(owner != nullptr, ValueError, "Tensor::adopt of ", describe(view),
            " without an owner of its elements");
  return Tensor(std::move(owner), view);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.view_.raw_data(), 0, size_t(t.numel()) * dtype_size(dtype));
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  const int64_t n = t.numel();
  if (dtype == DType::F64) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = value;
  } else {
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = float(value);
  }
  return t;
}

namespace {
template <class T>
Tensor from_values(const Shape& shape, std::span<const T> values) {
  QKV_CHECK(int64_t(values.size()) == shape.numel(), ShapeError, "shape ", shape, " needs ",
            shape.numel(), " values, got ", values.size());
  Tensor t = Tensor::empty(shape, dtype_of<T>);
  if (!values.empty()) std::memcpy(t.data<T>(), values.data(), values.size() * sizeof(T));
  return t;
}

// Copies of at least this many elements are split over the thread pool: a copy is
// memory-bound, and on the training step's layout changes (heads split and merged, a
// stacked projection's parts) one thread alone leaves the others waiting. Copying is
// exact, so the split never changes a result.
constexpr int64_t kParallelCopy = int64_t{1} << 16;
constexpr int64_t kCopyGrain = int64_t{1} << 14;  // elements per chunk (64 KiB of floats)

// One odometer step of the multi-index over axes [0, last] (the last fastest), moving
// the offsets into src and dst with it.
void advance(const TensorView& src, const TensorView& dst, int last,
             std::array<int64_t, kMaxRank>& index, int64_t& so, int64_t& dof) {
  for (int i = last; i >= 0; --i) {
    const auto ui = size_t(i);
    if (++index[ui] < src.shape()[i]) {
      so += src.stride(i);
      dof += dst.stride(i);
      return;
    }
    so -= src.stride(i) * (index[ui] - 1);
    dof -= dst.stride(i) * (index[ui] - 1);
    index[ui] = 0;
  }
}

// Rows [r0, r1) of a copy whose last axis is dense in both: whole inner rows, so only the
// outer axes pay for the odometer.
template <class Src, class Dst>
void copy_rows(const TensorView& src, const TensorView& dst, int64_t r0, int64_t r1) {
  const Src* s = static_cast<const Src*>(src.raw_data());
  Dst* d = static_cast<Dst*>(dst.raw_data());
  const int rank = src.rank();
  const int64_t cols = src.shape()[rank - 1];
  std::array<int64_t, kMaxRank> index{};  // of row r0 over the outer axes
  int64_t so = 0, dof = 0, rest = r0;
  for (int i = rank - 2; i >= 0; --i) {
    const auto ui = size_t(i);
    index[ui] = rest % src.shape()[i];
    rest /= src.shape()[i];
    so += index[ui] * src.stride(i);
    dof += index[ui] * dst.stride(i);
  }
  for (int64_t r = r0; r < r1; ++r) {
    if constexpr (std::is_same_v<Src, Dst>)  // a decoding step's cache append: 512 rows
      std::memcpy(d + dof, s + so, size_t(cols) * sizeof(Dst));  // of 64 floats
    else
      for (int64_t c = 0; c < cols; ++c) d[dof + c] = static_cast<Dst>(s[so + c]);
    advance(src, dst, rank - 2, index, so, dof);  // the outer axes only
  }
}

template <class Src, class Dst>
void copy_strided(const TensorView& src, const TensorView& dst) {
  const Src* s = static_cast<const Src*>(src.raw_data());
  Dst* d = static_cast<Dst*>(dst.raw_data());
  const int rank = src.rank();
  const int64_t n = src.numel();
  if (n == 0) return;
  // Fast paths (copies sit on autograd's hot path: every first gradient is one): memcpy
  // when both are contiguous, else whole inner rows when the last axis is dense in both.
  if constexpr (std::is_same_v<Src, Dst>) {
    if (src.is_contiguous() && dst.is_contiguous()) {
      if (n < kParallelCopy || in_parallel_region()) {
        std::memcpy(d, s, size_t(n) * sizeof(Dst));
        return;
      }
      parallel_for(0, n, kCopyGrain, [&](int64_t lo, int64_t hi) {
        std::memcpy(d + lo, s + lo, size_t(hi - lo) * sizeof(Dst));
      });
      return;
    }
  }
  if (rank >= 2 && src.stride(rank - 1) == 1 && dst.stride(rank - 1) == 1) {
    const int64_t cols = src.shape()[rank - 1], rows = n / cols;
    if (n < kParallelCopy || in_parallel_region()) return copy_rows<Src, Dst>(src, dst, 0, rows);
    parallel_for(0, rows, std::max<int64_t>(1, kCopyGrain / cols),
                 [&](int64_t r0, int64_t r1) { copy_rows<Src, Dst>(src, dst, r0, r1); });
    return;
  }
  std::array<int64_t, kMaxRank> index{};
  int64_t so = 0, dof = 0;
  for (int64_t k = 0; k < n; ++k) {
    d[dof] = static_cast<Dst>(s[so]);
    advance(src, dst, rank - 1, index, so, dof);
  }
}
}  // namespace

Tensor Tensor::from(const Shape& shape, std::span<const float> values) {
  return from_values(shape, values);
}
Tensor Tensor::from(const Shape& shape, std::span<const double> values) {
  return from_values(shape, values);
}

Tensor Tensor::transpose(int a, int b) const {
  return Tensor(storage_, view_.transpose(a, b));
}
Tensor Tensor::slice(int axis, int64_t begin, int64_t end) const {
  return Tensor(storage_, view_.slice(axis, begin, end));
}
Tensor Tensor::reshape(const Shape& shape) const {
  return Tensor(storage_, view_.reshape(shape));
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  return to(dtype());
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(shape(), dtype);
  copy_into(view_, out.view_);
  return out;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = to(dtype_of<T>);
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;

void copy_into(const TensorView& src, const TensorView& dst) {
  QKV_CHECK(src.shape() == dst.shape(), ShapeError, "copy: source ", describe(src),
            " and destination ", describe(dst), " differ in shape");
  const bool f64_src = src.dtype() == DType::F64, f64_dst = dst.dtype() == DType::F64;
  if (f64_src && f64_dst) return copy_strided<double, double>(src, dst);
  if (f64_src) return copy_strided<double, float>(src, dst);
  if (f64_dst) return copy_strided<float, double>(src, dst);
  copy_strided<float, float>(src, dst);
}

std::string describe(const TensorView& t) {
  return std::string(dtype_name(t.dtype())) + t.shape().str();
}

}  // namespace qkv
