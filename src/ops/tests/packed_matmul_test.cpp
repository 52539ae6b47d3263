// matmul_packed (decoding's products against a weight packed once) against matmul, its
// composed twin: F32 within rounding for shapes around the 32-column panel and any
// weight strides, F64 bit for bit (it is matmul), and bad input named.
#include "qkv/ops/packed_matmul.h"

#include <gtest/gtest.h>

#include <array>

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
