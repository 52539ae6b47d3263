#include "qkv/tensor/shape.h"

#include <ostream>
#include <sstream>

#include "qkv/base/error.h"

namespace qkv {

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  QKV_CHECK(dims.size() <= size_t(kMaxRank), ShapeError, "rank ", dims.size(),
            " exceeds the maximum ", kMaxRank);
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
  QKV_CHECK(rank_ < kMaxRank, ShapeError, "rank exceeds the maximum ", kMaxRank);
  QKV_CHECK(d >= 0, ShapeError, "negative dimension ", d, " in shape");
  dims_[size_t(rank_++)] = d;
}

int Shape::axis(int i, const char* what) const {
  QKV_CHECK(i >= -rank_ && i < rank_, ShapeError, what, " ", i, " out of range for shape ", str());
  return i < 0 ? i + rank_ : i;
}

int64_t Shape::dim(int i) const {
  return dims_[size_t(axis(i, "dim"))];
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) {
    const int64_t d = dims_[size_t(i)];
    QKV_CHECK(d == 0 || n <= INT64_MAX / d, ShapeError, "shape ", str(),
              " has more elements than int64 can count");
    n *= d;
  }
  return n;
}

int64_t Shape::rows() const {
  if (rank_ == 0) return 1;
  return back() == 0 ? without_dim(rank_ - 1).numel() : numel() / back();
}

Shape Shape::with_dim(int i, int64_t value) const {
  Shape s = *this;
  QKV_CHECK(value >= 0, ShapeError, "negative dimension ", value);
  s.dims_[size_t(axis(i))] = value;
  return s;
}

Shape Shape::without_dim(int i) const {
  const int a = axis(i);
  Shape s;
  for (int j = 0; j < rank_; ++j)
    if (j != a) s.push_back(dims_[size_t(j)]);
  return s;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank_; ++i) os << (i ? ", " : "") << dims_[size_t(i)];
  os << ']';
  return os.str();
}

bool operator==(const Shape& a, const Shape& b) noexcept {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[size_t(i)] != b.dims_[size_t(i)]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.str();
}

Strides contiguous_strides(const Shape& s) noexcept {
  Strides st{};
  int64_t stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[size_t(i)] = stride;
    stride *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

}  // namespace qkv
