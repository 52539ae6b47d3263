// matmul_packed (decoding's products against a weight packed once) against matmul, its
// composed twin: F32 within rounding for shapes around the 32-column panel and any
// weight strides, F64 bit for bit (it is matmul), and bad input named.
#include "qkv/ops/packed_matmul.h"

#include <gtest/gtest.h>

#include <array>

#include "qkv/ops/elementwise.h"
#include "qkv/ops/matmul.h"
#include "qkv/testing/expect_error.h"
#include "qkv/testing/tensors.h"

namespace qkv::testing {
namespace {

TEST(PackedMatmul, EqualsMatmulWithTransposedWeight) {
  for (const auto [m, n, k] :
       {std::array<int64_t, 3>{1, 1, 1}, {3, 31, 7}, {5, 32, 16}, {13, 33, 64}, {40, 100, 3}}) {
    SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " k " << k);
    const Tensor x = random_tensor({m, k}, DType::F32, 1), w = random_tensor({n, k}, DType::F32, 2);
    const ops::PackedWeight packed(w);
    EXPECT_EQ(packed.rows(), n);
    EXPECT_EQ(packed.cols(), k);
    const Tensor want = ops::matmul(x, w, {.transpose_b = true});
    EXPECT_TRUE(all_close(ops::matmul_packed(x, packed), want, 1e-5, 1e-6));
    // A weight stored transposed ([K, N] viewed as [N, K]) packs the same matrix.
    const Tensor wt = w.transpose(0, 1).contiguous();
    EXPECT_TRUE(
        all_close(ops::matmul_packed(x, ops::PackedWeight(wt.transpose(0, 1))), want, 1e-5, 1e-6));
  }
}

// The bias added in the micro-kernel's store is bit for bit add_bias afterwards, in the
// full panels, the partial last one and the last rows' shorter tiles.
TEST(PackedMatmul, BiasInTheProductEqualsAddingItAfterwards) {
  for (const auto [m, n, k] :
       {std::array<int64_t, 3>{1, 1, 1}, {3, 31, 7}, {13, 32, 16}, {29, 33, 64}, {40, 100, 3}}) {
    SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " k " << k);
    for (const DType dt : {DType::F32, DType::F64}) {
      const Tensor x = random_tensor({m, k}, dt, 1), w = random_tensor({n, k}, dt, 2);
      const Tensor b = random_tensor({n}, dt, 3);
      const ops::PackedWeight packed(w);
      const TensorView bv = b.view();
      EXPECT_TRUE(bitwise_equal(ops::matmul_packed(x, packed, &bv),
                                ops::add_bias(ops::matmul_packed(x, packed), b)));
    }
  }
}

TEST(PackedMatmul, Float64IsMatmul) {
  const Tensor x = random_tensor({4, 9}, DType::F64, 3), w = random_tensor({11, 9}, DType::F64, 4);
  EXPECT_TRUE(bitwise_equal(ops::matmul_packed(x, ops::PackedWeight(w)),
                            ops::matmul(x, w, {.transpose_b = true})));
}

TEST(PackedMatmul, BadInputIsNamed) {
  const Tensor w = random_tensor({6, 4}, DType::F32, 5);
  const ops::PackedWeight packed(w);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::matmul_packed(random_tensor({2, 5}, DType::F32, 6), packed);
      },
      {"matmul_packed", "[2, 5]", "[M, 4]", "[6, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::matmul_packed(random_tensor({2, 3, 4}, DType::F32, 6), packed);
      },
      {"matmul_packed", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::matmul_packed(random_tensor({2, 4}, DType::F64, 6), packed);
      },
      {"matmul_packed", "f64", "f32"}));
  const Tensor short_bias = random_tensor({5}, DType::F32, 7);
  const TensorView sb = short_bias.view();
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::matmul_packed(random_tensor({2, 4}, DType::F32, 6), packed, &sb);
      },
      {"matmul_packed", "bias", "[5]", "[6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::PackedWeight(random_tensor({6}, DType::F32, 5)); },
                                      {"PackedWeight", "[N, K]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::PackedWeight(Tensor::zeros({0, 4}, DType::F32));
      },
      {"PackedWeight"}));
}

}  // namespace
}  // namespace qkv::testing
