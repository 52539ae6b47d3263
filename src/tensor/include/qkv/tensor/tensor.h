// Tensor: an N-d array owning (shared) 64-byte-aligned storage.
// TensorView: a non-owning strided window onto someone else's elements.
//
// Both are row-major with element strides; views produced by transpose/slice share
// storage and may be non-contiguous. Ops accept TensorView (any Tensor converts) and
// return new contiguous Tensors. The element type is a runtime DType, so a new type
// (bf16) does not change callers' signatures.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/tensor/dtype.h"
#include "qkv/tensor/shape.h"

namespace qkv {

class TensorView {
 public:
  TensorView() = default;
  TensorView(void* data, const Shape& shape, DType dtype);  // contiguous
  TensorView(void* data, const Shape& shape, const Strides& strides, DType dtype);

  const Shape& shape() const noexcept { return shape_; }
  int rank() const noexcept { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const noexcept { return dtype_; }
  int64_t stride(int i) const noexcept { return strides_[size_t(i)]; }
  const Strides& strides() const noexcept { return strides_; }
  bool is_contiguous() const noexcept;

  // Typed pointer to the first element; throws ValueError if T is not the dtype.
  template <class T>
  T* data() const {
    QKV_CHECK(dtype_of<T> == dtype_, ValueError, "tensor holds ", dtype_name(dtype_),
              ", accessed as ", dtype_name(dtype_of<T>));
    return static_cast<T*>(data_);
  }
  void* raw_data() const noexcept { return data_; }

  // Element at a multi-index (checked; for tests and small code paths, not loops).
  template <class T>
  T& at(std::initializer_list<int64_t> index) const {
    return data<T>()[offset_of(index)];
  }

  TensorView transpose(int a, int b) const;
  TensorView slice(int axis, int64_t begin, int64_t end) const;
  // Same elements, new shape; requires a contiguous view and an equal element count.
  TensorView reshape(const Shape& shape) const;

 protected:
  int64_t offset_of(std::initializer_list<int64_t> index) const;

  void* data_ = nullptr;
  Shape shape_;
  Strides strides_{};
  DType dtype_ = DType::F32;
};

class Tensor {
 public:
  Tensor() = default;  // empty: rank 0 with no storage; defined() is false

  static Tensor empty(const Shape& shape, DType dtype = DType::F32);  // uninitialised
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::F32);
  // Copies `values` (size must equal shape.numel(), else ShapeError).
  static Tensor from(const Shape& shape, std::span<const float> values);
  static Tensor from(const Shape& shape, std::span<const double> values);
  // A Tensor over elements it did not allocate (a numpy array's, for the Python module):
  // `owner` keeps them alive while any Tensor shares them and releases them after the
  // last; `view` says where they are. Nothing is copied; the elements need not be
  // 64-byte aligned (views of Tensors need not be either). ValueError for a null owner.
  static Tensor adopt(std::shared_ptr<void> owner, const TensorView& view);

  bool defined() const noexcept { return storage_ != nullptr; }
  // True when no other Tensor shares this storage (no view, no copy of the handle), so
  // the holder may adopt it instead of copying: autograd takes over a fresh gradient.
  bool sole_owner() const noexcept { return storage_ != nullptr && storage_.use_count() == 1; }
  const TensorView& view() const noexcept { return view_; }
  operator const TensorView&() const noexcept { return view_; }  // NOLINT: cheap, intended

  const Shape& shape() const noexcept { return view_.shape(); }
  int rank() const noexcept { return view_.rank(); }
  int64_t dim(int i) const { return view_.dim(i); }
  int64_t numel() const { return view_.numel(); }
  DType dtype() const noexcept { return view_.dtype(); }
  bool is_contiguous() const noexcept { return view_.is_contiguous(); }
  template <class T>
  T* data() const {
    return view_.data<T>();
  }
  template <class T>
  T& at(std::initializer_list<int64_t> index) const {
    return view_.at<T>(index);
  }

  // Views sharing this tensor's storage.
  Tensor transpose(int a, int b) const;
  Tensor slice(int axis, int64_t begin, int64_t end) const;
  Tensor reshape(const Shape& shape) const;

  // A contiguous copy (or *this when already contiguous), a deep copy, a converted copy.
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;

  // All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

 private:
  Tensor(std::shared_ptr<void> storage, const TensorView& view)
      : storage_(std::move(storage)), view_(view) {}

  std::shared_ptr<void> storage_;
  TensorView view_;
};

// Copies src into dst elementwise (shapes must match; dtypes may differ).
void copy_into(const TensorView& src, const TensorView& dst);

// "f32[2, 3]" for messages.
std::string describe(const TensorView& t);

}  // namespace qkv
