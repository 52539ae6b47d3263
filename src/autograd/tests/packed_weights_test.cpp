// PackedWeightsScope: inside a scope with grad mode off, products with a parameter
// (matmul x · Wᵀ, stacked_linear) run on a weight packed once and give the unpacked
// values; with grad mode on, outside a scope, or for a weight that is not a parameter,
// nothing is packed and the tape records as always.
#include "qkv/autograd/packed_weights.h"

#include <gtest/gtest.h>

#include "qkv/autograd/functions.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

const ops::MatmulOptions kXWt{.transpose_a = false, .transpose_b = true};

TEST(PackedWeights, ParametersArePackedOnceInsideAScopeWithoutGrad) {
  const Variable w(random_tensor({70, 24}, DType::F32, 1), /*requires_grad=*/true);
  const Variable x(random_tensor({5, 24}, DType::F32, 2));
  Tensor plain;
  {
    const NoGradGuard no_grad;
    plain = matmul(x, w, kXWt).value();
  }
  const PackedWeightsScope scope;
  const NoGradGuard no_grad;
  const Tensor first = matmul(x, w, kXWt).value();
  const Tensor second = matmul(x, w, kXWt).value();
  EXPECT_EQ(scope.packed_count(), 1);  // packed on first use, then reused
  EXPECT_TRUE(bitwise_equal(first, second));
  EXPECT_TRUE(all_close(first, plain, 1e-5, 1e-6));
  // Not a parameter (a step's intermediate): the plain product, nothing packed.
  const Variable y(random_tensor({70, 24}, DType::F32, 3));
  EXPECT_TRUE(bitwise_equal(matmul(x, y, kXWt).value(), ops::matmul(x.value(), y.value(), kXWt)));
  EXPECT_EQ(scope.packed_count(), 1);
}

TEST(PackedWeights, StackedLinearUsesOnePackingOfTheStack) {
  const Variable wq(random_tensor({16, 16}, DType::F32, 1), true);
  const Variable wk(random_tensor({16, 16}, DType::F32, 2), true);
  const Variable b1(random_tensor({16}, DType::F32, 3), true);
  const Variable b2(random_tensor({16}, DType::F32, 4), true);
  const Variable x(random_tensor({3, 16}, DType::F32, 5));
  const NoGradGuard no_grad;
  const Tensor plain = stacked_linear(x, {wq, wk}, {b1, b2}).value();
  const PackedWeightsScope scope;
  EXPECT_TRUE(all_close(stacked_linear(x, {wq, wk}, {b1, b2}).value(), plain, 1e-5, 1e-6));
  stacked_linear(x, {wq, wk}, {b1, b2});
  EXPECT_EQ(scope.packed_count(), 1);
  matmul(x, wq, kXWt);  // wq alone is another product
  EXPECT_EQ(scope.packed_count(), 2);
}

TEST(PackedWeights, GradModeAndEndedScopesPackNothing) {
  const Variable w(random_tensor({8, 4}, DType::F32, 1), true);
  const Variable x(random_tensor({2, 4}, DType::F32, 2), true);
  {
    const PackedWeightsScope scope;
    // Grad mode on: recorded, and backward reaches both operands.
    const Variable loss = sum(matmul(x, w, kXWt));
    backward(loss);
    EXPECT_EQ(scope.packed_count(), 0);
    EXPECT_TRUE(w.grad().defined());
    EXPECT_TRUE(x.grad().defined());
  }
  const NoGradGuard no_grad;
  {
    const PackedWeightsScope outer;
    {
      const PackedWeightsScope inner;  // nested: the innermost scope packs
      matmul(x, w, kXWt);
      EXPECT_EQ(inner.packed_count(), 1);
    }
    EXPECT_EQ(outer.packed_count(), 0);
    matmul(x, w, kXWt);
    EXPECT_EQ(outer.packed_count(), 1);
  }
  // No scope: the plain product.
  EXPECT_TRUE(bitwise_equal(matmul(x, w, kXWt).value(), ops::matmul(x.value(), w.value(), kXWt)));
}

}  // namespace
}  // namespace qkv::autograd
