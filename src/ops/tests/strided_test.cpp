// Every op gives the same result for strided (non-contiguous) inputs as for contiguous
// ones: the ops layer stages strided views before calling the kernels.
#include <limits>

#include "op_cases.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/ops/matmul.h"
#include "qkv/ops/shape_ops.h"
#include "qkv/testing/tensors.h"

namespace qkv::testing {
namespace {

class StridedInputs : public ::testing::TestWithParam<DType> {};

TEST_P(StridedInputs, EveryOpMatchesContiguousResult) {
  uint64_t seed = 100;
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> inputs = make_inputs(c, GetParam(), seed += 10);
    std::vector<TensorView> contiguous, strided;
    std::vector<StridedCopy> keep;
    for (const Tensor& t : inputs) {
      contiguous.push_back(t);
      keep.push_back(strided_copy(t));
      if (t.rank() > 0 && t.numel() > 1) {
        EXPECT_FALSE(keep.back().view.is_contiguous());
      }
      strided.push_back(keep.back().view);
    }
    const std::vector<Tensor> expected = c.run(contiguous);
    const std::vector<Tensor> actual = c.run(strided);
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_TRUE(bitwise_equal(actual[i], expected[i])) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, StridedInputs, ::testing::Values(DType::F32, DType::F64),
                         [](const auto& param_info) {
                           return std::string(dtype_name(param_info.param));
                         });

TEST(StridedInputs, MatmulOfTransposedViewEqualsTransposeFlag) {
  for (DType dtype : {DType::F32, DType::F64}) {
    const Tensor a_stored = random_tensor({7, 5}, dtype, 1);  // A stored [K, M]
    const Tensor b = random_tensor({7, 3}, dtype, 2);
    const Tensor via_view = ops::matmul(a_stored.transpose(0, 1), b);
    const Tensor via_flag = ops::matmul(a_stored, b, {.transpose_a = true});
    EXPECT_TRUE(all_close(via_view, via_flag, 1e-5, 1e-5));
  }
}

TEST(StridedInputs, ShapeOpsOnTransposedTensors) {
  const Tensor x = random_tensor({4, 6}, DType::F64, 3);
  const Tensor xt = x.transpose(0, 1);  // non-contiguous [6, 4]
  ASSERT_FALSE(xt.is_contiguous());
  EXPECT_TRUE(bitwise_equal(ops::reshape(xt, {24}), xt.contiguous().reshape({24})));
  EXPECT_TRUE(bitwise_equal(ops::transpose(xt, 0, 1), x));
  EXPECT_TRUE(bitwise_equal(ops::reshape_backward(ops::reshape(xt, {3, 8}), {6, 4}), xt));
}

// A decoder's K/V cache [B, H, capacity, D] sliced to the t positions so far: forward
// reads it in place (spare rows NaN here, so reading one would show) and equals the
// contiguous copy bitwise, for every placement of unit dims.
TEST(StridedInputs, FlashAttentionReadsACacheSliceInPlace) {
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Shape& heads : {Shape{3, 4}, Shape{1, 4}, Shape{3, 1}, Shape{1, 1}}) {
      SCOPED_TRACE(::testing::Message()
                   << dtype_name(dtype) << " B " << heads[0] << " H " << heads[1]);
      const int64_t b = heads[0], h = heads[1], t = 6, capacity = 9, d = 8, dv = 5;
      const Tensor q = random_tensor({b, h, 1, d}, dtype, 7);
      Tensor k_cache =
          Tensor::full({b, h, capacity, d}, std::numeric_limits<double>::quiet_NaN(), dtype);
      Tensor v_cache =
          Tensor::full({b, h, capacity, dv}, std::numeric_limits<double>::quiet_NaN(), dtype);
      const Tensor k_dense = random_tensor({b, h, t, d}, dtype, 8);
      const Tensor v_dense = random_tensor({b, h, t, dv}, dtype, 9);
      copy_into(k_dense, k_cache.slice(2, 0, t));
      copy_into(v_dense, v_cache.slice(2, 0, t));
      const Tensor k = k_cache.slice(2, 0, t), v = v_cache.slice(2, 0, t);
      ASSERT_FALSE(k.is_contiguous() && b * h > 1);
      std::vector<int64_t> lengths(size_t(b), t);
      lengths[0] = t - 2;
      const ops::FlashAttentionOptions options{.scale = 0.35, .key_lengths = lengths};
      const ops::FlashAttentionResult got = ops::flash_attention(q, k, v, options);
      const ops::FlashAttentionResult want = ops::flash_attention(q, k_dense, v_dense, options);
      EXPECT_TRUE(bitwise_equal(got.out, want.out));
      EXPECT_TRUE(bitwise_equal(got.lse, want.lse));
    }
  }
}

// key_rows: query row b reads row key_rows[b] of k and v (a beam's rows sharing their
// sentence's cross-attention memory) and equals, bitwise, attention on k and v gathered
// row by row -- in forward and in the weights, with key lengths, Tq > 1, causal, and k / v
// read in place from a cache slice. The SIMD kernel (F32) and the reference (F64).
TEST(StridedInputs, FlashAttentionKeyRowsEqualGatheredKeys) {
  const std::vector<int64_t> rows{2, 2, 0, 1, 1, 1, 0};  // repeats, out of order, one unused
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const bool causal : {false, true}) {
      for (const int64_t tq : {int64_t{1}, int64_t{3}}) {
        SCOPED_TRACE(::testing::Message()
                     << dtype_name(dtype) << " causal " << causal << " tq " << tq);
        const int64_t b = int64_t(rows.size()), sources = 4, h = 3, t = 70, capacity = 80, d = 8,
                      dv = 5;
        const Tensor q = random_tensor({b, h, tq, d}, dtype, 17);
        Tensor k_cache = Tensor::full({sources, h, capacity, d},
                                      std::numeric_limits<double>::quiet_NaN(), dtype);
        Tensor v_cache = Tensor::full({sources, h, capacity, dv},
                                      std::numeric_limits<double>::quiet_NaN(), dtype);
        copy_into(random_tensor({sources, h, t, d}, dtype, 18), k_cache.slice(2, 0, t));
        copy_into(random_tensor({sources, h, t, dv}, dtype, 19), v_cache.slice(2, 0, t));
        const Tensor k = k_cache.slice(2, 0, t), v = v_cache.slice(2, 0, t);
        Tensor k_rows = Tensor::empty({b, h, t, d}, dtype),
               v_rows = Tensor::empty({b, h, t, dv}, dtype);
        for (int64_t r = 0; r < b; ++r) {
          copy_into(k.slice(0, rows[size_t(r)], rows[size_t(r)] + 1), k_rows.slice(0, r, r + 1));
          copy_into(v.slice(0, rows[size_t(r)], rows[size_t(r)] + 1), v_rows.slice(0, r, r + 1));
        }
        std::vector<int64_t> lengths(size_t(b), t);
        lengths[1] = 9;
        lengths[4] = 65;
        ops::FlashAttentionOptions options{.scale = 0.35, .causal = causal, .key_lengths = lengths};
        const ops::FlashAttentionResult want = ops::flash_attention(q, k_rows, v_rows, options);
        const Tensor want_w = ops::flash_attention_weights(q, k_rows, want.lse, options);
        options.key_rows = rows;
        const ops::FlashAttentionResult got = ops::flash_attention(q, k, v, options);
        EXPECT_TRUE(bitwise_equal(got.out, want.out));
        EXPECT_TRUE(bitwise_equal(got.lse, want.lse));
        EXPECT_TRUE(bitwise_equal(ops::flash_attention_weights(q, k, got.lse, options), want_w));
      }
    }
  }
}

}  // namespace
}  // namespace qkv::testing
