// Shapes and strides: small fixed-capacity vectors of int64 (no heap), row-major,
// last dimension contiguous. Dimension vocabulary used in comments across qkv:
// B batch, H heads, Tq/Tk query/key length, Dh head dim, E model dim, V vocabulary.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>

namespace qkv {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  // Throws ShapeError for a negative dimension or rank > kMaxRank.
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);

  int rank() const noexcept { return rank_; }
  // dim(i) with i in [-rank, rank): negative counts from the end. Throws ShapeError.
  int64_t dim(int i) const;
  int64_t operator[](int i) const noexcept { return dims_[static_cast<size_t>(i)]; }
  int64_t back() const noexcept { return dims_[static_cast<size_t>(rank_ - 1)]; }
  // Product of all dims (1 for rank 0); throws ShapeError on int64 overflow.
  int64_t numel() const;
  // Product of dims [0, rank-1): the number of rows when the last dim is a row.
  int64_t rows() const;
  std::span<const int64_t> dims() const noexcept { return {dims_.data(), size_t(rank_)}; }

  // Normalises a possibly negative axis, throwing ShapeError naming `what`.
  int axis(int i, const char* what = "axis") const;

  Shape with_dim(int i, int64_t value) const;
  Shape without_dim(int i) const;
  void push_back(int64_t d);

  std::string str() const;  // "[2, 3, 4]"
  friend bool operator==(const Shape& a, const Shape& b) noexcept;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Strides in elements; same capacity as Shape.
using Strides = std::array<int64_t, kMaxRank>;
Strides contiguous_strides(const Shape& s) noexcept;

}  // namespace qkv
