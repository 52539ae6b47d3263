// MultiHeadAttention: reduces to single-head scaled dot, splits heads the PyTorch way,
// averages weights, initialises per Xavier, agrees across dtypes and thread counts.
#include "qkv/attention/multi_head.h"

#include <cmath>

#include "attention_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::attention::testing {
namespace {

using qkv::testing::all_close;
using qkv::testing::bitwise_equal;

Tensor identity(int64_t n, DType dtype) {
  Tensor eye = Tensor::zeros({n, n}, DType::F64);
  for (int64_t i = 0; i < n; ++i) eye.at<double>({i, i}) = 1.0;
  return eye.to(dtype);
}

// Identity projections with zero biases: MHA is bare scaled-dot attention per head.
MultiHeadAttention identity_mha(int64_t e, int64_t heads) {
  MultiHeadParams p;
  for (Variable* w : {&p.wq, &p.wk, &p.wv, &p.wo}) *w = leaf(identity(e, DType::F64));
  for (Variable* b : {&p.bq, &p.bk, &p.bv, &p.bo}) *b = leaf(Tensor::zeros({e}, DType::F64));
  return MultiHeadAttention(p, heads);
}

TEST(MultiHead, OneHeadWithIdentityProjectionsEqualsScaledDot) {
  const Variable q = leaf(random_tensor({2, 3, 6}, DType::F64, 1)),
                 k = leaf(random_tensor({2, 5, 6}, DType::F64, 2)),
                 v = leaf(random_tensor({2, 5, 6}, DType::F64, 3));
  const MaskSpec mask = make_mask(MaskKind::Combined, 3, 5, DType::F64);
  const MultiHeadOutput m = identity_mha(6, 1).forward(q, k, v, mask, {true, HeadWeights::PerHead});
  const AttentionOutput a =
      attend(q, k, v, mask, {}, {.kind = ScoreKind::ScaledDot, .need_weights = true});
  EXPECT_TRUE(all_close(m.output.value(), a.context.value(), 1e-14, 1e-12));
  EXPECT_TRUE(all_close(m.weights.value().reshape({2, 3, 5}), a.weights.value(), 1e-15, 1e-12));
}

TEST(MultiHead, HeadHAttendsOverFeatureSliceH) {
  // PyTorch's split: head h owns features [h·Dh, (h+1)·Dh) of E.
  const int64_t e = 6, heads = 3, dh = 2;
  const Tensor q = random_tensor({2, 4, e}, DType::F64, 4),
               k = random_tensor({2, 5, e}, DType::F64, 5),
               v = random_tensor({2, 5, e}, DType::F64, 6);
  const MaskSpec mask = make_mask(MaskKind::KeyLengths, 4, 5, DType::F64);
  const MultiHeadOutput m =
      identity_mha(e, heads).forward(leaf(q), leaf(k), leaf(v), mask, {true, HeadWeights::PerHead});
  for (int64_t h = 0; h < heads; ++h) {
    auto part = [&](const Tensor& t) {
      return leaf(t.slice(2, h * dh, (h + 1) * dh).contiguous());
    };
    const AttentionOutput a = attend(part(q), part(k), part(v), mask, {},
                                     {.kind = ScoreKind::ScaledDot, .need_weights = true});
    EXPECT_TRUE(all_close(m.output.value().slice(2, h * dh, (h + 1) * dh), a.context.value(), 1e-14,
                          1e-12));
    EXPECT_TRUE(all_close(m.weights.value().slice(1, h, h + 1).contiguous().reshape({2, 4, 5}),
                          a.weights.value(), 1e-15, 1e-12));
  }
  autograd::clear_tape();
}

TEST(MultiHead, AveragedWeightsAreTheMeanOverHeadsAndShapesFollowTheHeader) {
  Rng rng(7);
  const MultiHeadAttention mha(8, 4, rng);
  const Variable q = leaf(random_tensor({2, 3, 8}, DType::F32, 1)),
                 kv = leaf(random_tensor({2, 5, 8}, DType::F32, 2));
  const MultiHeadOutput per = mha.forward(q, kv, kv, {}, {true, HeadWeights::PerHead});
  const MultiHeadOutput avg = mha.forward(q, kv, kv, {}, {true, HeadWeights::Averaged});
  const MultiHeadOutput none = mha.forward(q, kv, kv, {});
  EXPECT_EQ(per.output.value().shape(), (Shape{2, 3, 8}));
  EXPECT_EQ(per.weights.value().shape(), (Shape{2, 4, 3, 5}));
  EXPECT_EQ(avg.weights.value().shape(), (Shape{2, 3, 5}));
  EXPECT_FALSE(none.weights.defined());
  EXPECT_TRUE(bitwise_equal(none.output.value(), per.output.value()));
  Tensor mean = Tensor::zeros({2, 3, 5}, DType::F64);
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j)
          mean.at<double>({b, i, j}) += per.weights.value().at<float>({b, h, i, j}) / 4.0;
  EXPECT_TRUE(all_close(avg.weights.value(), mean, 1e-7, 1e-6));
  autograd::clear_tape();
}

TEST(MultiHead, XavierUniformInitIsSeededBoundedAndTrainable) {
  Rng a(3), b(3);
  const MultiHeadAttention m1(16, 4, a), m2(16, 4, b);
  EXPECT_EQ(m1.heads(), 4);
  const double bound = std::sqrt(6.0 / 32.0);
  for (const Variable* w : {&m1.params().wq, &m1.params().wk, &m1.params().wv, &m1.params().wo}) {
    EXPECT_EQ(w->value().dtype(), DType::F32);
    EXPECT_TRUE(w->requires_grad());
    double sum_sq = 0;
    for (float x : w->value().to_vector<float>()) {
      EXPECT_LE(std::abs(x), bound);
      sum_sq += double(x) * x;
    }
    // Var U(−a, a) = a²/3 = 1/16 here; 256 draws land well within 30% of it.
    EXPECT_NEAR(sum_sq / 256.0, bound * bound / 3.0, 0.3 * bound * bound / 3.0);
  }
  EXPECT_FALSE(bitwise_equal(m1.params().wq.value(), m1.params().wk.value()));
  EXPECT_TRUE(bitwise_equal(m1.params().wo.value(), m2.params().wo.value()));
  for (const Variable* bias : {&m1.params().bq, &m1.params().bo})
    EXPECT_TRUE(bitwise_equal(bias->value(), Tensor::zeros({16}, DType::F32)));
}

// Forward + backward of a mid-size masked MHA in `dtype`; returns output, weights, grads.
std::vector<Tensor> mha_pass(DType dtype, const MaskSpec& mask) {
  const int64_t e = 48, tq = 37, tk = 41;
  std::vector<Variable> v;
  for (uint64_t i = 0; i < 4; ++i) v.push_back(leaf(random_tensor({e, e}, dtype, 10 + i, 0.2)));
  for (uint64_t i = 0; i < 4; ++i) v.push_back(leaf(random_tensor({e}, dtype, 20 + i, 0.1)));
  const Variable q = leaf(random_tensor({2, tq, e}, dtype, 1)),
                 kv = leaf(random_tensor({2, tk, e}, dtype, 2));
  const MultiHeadAttention mha({v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}, 4);
  const MultiHeadOutput out = mha.forward(q, kv, kv, mask, {true, HeadWeights::Averaged});
  autograd::backward(autograd::add(project(out.output, 3), project(out.weights, 4)));
  std::vector<Tensor> r = {out.output.value(), out.weights.value(), q.grad(), kv.grad()};
  for (const Variable& p : v) r.push_back(p.grad());
  return r;
}

TEST(MultiHead, BitwiseIdenticalForOneAndTwoThreads) {
  const MaskSpec mask{.key_lengths = {41, 23}, .causal = true};
  set_num_threads(1);
  const std::vector<Tensor> one = mha_pass(DType::F32, mask);
  set_num_threads(2);
  const std::vector<Tensor> two = mha_pass(DType::F32, mask);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(bitwise_equal(one[i], two[i])) << i;
}

TEST(MultiHead, Float32AgreesWithFloat64) {
  const MaskSpec m64{.key_lengths = {41, 23}, .causal = true};
  const std::vector<Tensor> r64 = mha_pass(DType::F64, m64), r32 = mha_pass(DType::F32, m64);
  for (size_t i = 0; i < r64.size(); ++i)
    EXPECT_TRUE(all_close(r32[i], r64[i], 1e-4, 1e-3)) << "output " << i;
}

}  // namespace
}  // namespace qkv::attention::testing
