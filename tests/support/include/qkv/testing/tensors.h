// Tensors for tests from the tensor layer up (ops, autograd, attention, nn, models):
// random tensors from a fixed seed, non-contiguous copies, bitwise and tolerance
// comparisons. The typed-error assertions come along (expect_error.h).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/rng.h"
#include "qkv/tensor/tensor.h"
#include "qkv/testing/expect_error.h"

namespace qkv::testing {

// Normal(0, scale) values from a fixed Rng.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  Tensor t = Tensor::empty(shape, DType::F64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = scale * double(rng.normal());
  return t.to(dtype);
}

// Integer ids in [0, upper) stored as floats.
inline Tensor random_ids(const Shape& shape, DType dtype, uint64_t seed, int64_t upper) {
  Rng rng(seed);
  Tensor t = Tensor::empty(shape, DType::F64);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<double>()[i] = double(rng.uniform_int(uint64_t(upper)));
  return t.to(dtype);
}

// The same values as `t`, as a non-contiguous view: every element of the last dim sits
// two elements apart in `storage` (rank 0 stays contiguous).
struct StridedCopy {
  Tensor storage;
  TensorView view;
};
inline StridedCopy strided_copy(const TensorView& t) {
  if (t.rank() == 0) {
    Tensor c = Tensor::empty(t.shape(), t.dtype());
    copy_into(t, c);
    return {c, c.view()};
  }
  const Shape wide = t.shape().with_dim(-1, 2 * t.dim(-1));
  Tensor storage = Tensor::zeros(wide, t.dtype());
  Strides strides = contiguous_strides(wide);
  strides[size_t(t.rank() - 1)] = 2;
  const TensorView view(storage.view().raw_data(), t.shape(), strides, t.dtype());
  copy_into(t, view);
  return {storage, view};
}

inline std::vector<double> values_of(const TensorView& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  copy_into(t, c);
  return c.to(DType::F64).to_vector<double>();
}

// Bitwise equality of shapes, dtypes and values (NaNs compared by bits).
inline ::testing::AssertionResult bitwise_equal(const TensorView& a, const TensorView& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << describe(a) << " vs " << describe(b);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  for (size_t i = 0; i < va.size(); ++i)
    if (std::memcmp(&va[i], &vb[i], sizeof(double)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": " << va[i] << " vs " << vb[i];
  return ::testing::AssertionSuccess();
}

// |a − b| <= atol + rtol·|b| elementwise (inf == inf allowed).
inline ::testing::AssertionResult all_close(const TensorView& a, const TensorView& b, double atol,
                                            double rtol) {
  if (!(a.shape() == b.shape()))
    return ::testing::AssertionFailure() << describe(a) << " vs " << describe(b);
  const std::vector<double> va = values_of(a), vb = values_of(b);
  for (size_t i = 0; i < va.size(); ++i) {
    if (va[i] == vb[i]) continue;
    if (!(std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << va[i] << " vs " << vb[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace qkv::testing
