// attend() and MultiHeadAttention on the fused kernels (AttentionOptions::fused) against
// the composed path (the oracle, fused = false), for every score kind × mask kind, on
// every SIMD target this CPU runs and with 1 and 2 threads:
//   - FlashAttention's accuracy rule: the fused float32 error against a float64 run of
//     the composed path is at most 2× the composed float32 error (+1e-5) for the
//     context, 3× for the gradients;
//   - bitwise identical results for 1 and 2 threads;
//   - inspection weights (recomputed from the saved log-sum-exp) equal the composed
//     softmax weights, for all rows or the rows asked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention_test_util.h"
#include "qkv/attention/attention.h"
#include "qkv/attention/multi_head.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/dispatch.h"

namespace qkv::attention {
namespace {

using autograd::Variable;
using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;
using testing::leaf;
using testing::MaskKind;
using testing::project;

constexpr int64_t kB = 2, kTq = 11, kTk = 9, kD = 8, kDv = 5, kHidden = 6;

struct Outcome {
  Tensor context, weights;
  std::vector<Tensor> grads;  // q, k, v, then the score parameters
};

// One forward + backward of attend() in `dtype` on fixed random inputs (the same values
// in either dtype: drawn in float64, then rounded).
Outcome run_attend(ScoreKind kind, MaskKind mask_kind, DType dtype, bool fused,
                   bool need_weights = false) {
  const int64_t dk = testing::key_dim(kind, kD);
  std::vector<Variable> vars = {leaf(random_tensor({kB, kTq, kD}, DType::F64, 1).to(dtype)),
                                leaf(random_tensor({kB, kTk, dk}, DType::F64, 2).to(dtype)),
                                leaf(random_tensor({kB, kTk, kDv}, DType::F64, 3).to(dtype))};
  for (const Tensor& p : testing::param_tensors(kind, kD, dk, kHidden, DType::F64, 10))
    vars.push_back(leaf(p.to(dtype)));
  const MaskSpec mask = testing::make_mask(mask_kind, kTq, kTk, DType::F64);
  MaskSpec typed = mask;
  if (mask.bias.defined()) typed.bias = mask.bias.to(dtype);
  if (mask.allowed.defined()) typed.allowed = mask.allowed.to(dtype);
  const AttentionOptions o{
      .kind = kind, .temperature = 0.6, .need_weights = need_weights, .fused = fused};
  const AttentionOutput out =
      attend(vars[0], vars[1], vars[2], typed, testing::params_from(kind, vars, 3), o);
  autograd::backward(project(out.context, 9));
  Outcome r{out.context.value(), need_weights ? out.weights.value() : Tensor(), {}};
  for (const Variable& v : vars) r.grads.push_back(v.grad());
  return r;
}

double max_abs_error(const Tensor& got, const Tensor& want64) {
  const Tensor g = got.to(DType::F64).contiguous(), w = want64.contiguous();
  double m = 0;
  for (int64_t i = 0; i < g.numel(); ++i)
    m = std::max(m, std::fabs(g.data<double>()[i] - w.data<double>()[i]));
  return m;
}

// FlashAttention's rule (Dao et al. 2022, sec. 4): fused error <= factor × composed
// error + 1e-5, both in float32 against the float64 oracle.
::testing::AssertionResult within_rule(const Tensor& fused, const Tensor& composed,
                                       const Tensor& oracle, double factor) {
  const double ef = max_abs_error(fused, oracle), ec = max_abs_error(composed, oracle);
  if (ef <= factor * ec + 1e-5) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "fused error " << ef << " > " << factor << " x composed error " << ec << " + 1e-5";
}

void expect_fused_matches(ScoreKind kind, MaskKind mask) {
  const Outcome oracle = run_attend(kind, mask, DType::F64, false);
  const Outcome composed = run_attend(kind, mask, DType::F32, false);
  const Outcome fused = run_attend(kind, mask, DType::F32, true);
  EXPECT_TRUE(within_rule(fused.context, composed.context, oracle.context, 2));
  ASSERT_EQ(fused.grads.size(), oracle.grads.size());
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    EXPECT_TRUE(within_rule(fused.grads[i], composed.grads[i], oracle.grads[i], 3));
  }
  // Asking for weights does not change the context or gradients (same path).
  const Outcome with_weights = run_attend(kind, mask, DType::F32, true, true);
  EXPECT_TRUE(bitwise_equal(with_weights.context, fused.context));
  for (size_t i = 0; i < fused.grads.size(); ++i)
    EXPECT_TRUE(bitwise_equal(with_weights.grads[i], fused.grads[i]));
  const Outcome composed_weights = run_attend(kind, mask, DType::F32, false, true);
  EXPECT_TRUE(all_close(with_weights.weights, composed_weights.weights, 2e-6, 2e-5));
}

TEST(Fused, EveryScoreKindMaskKindTargetAndThreadCount) {
  const int before = num_threads();
  for (const kernels::SimdTarget& target : kernels::simd_targets()) {
    const kernels::ScopedSimdTarget pin(target.bits);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (ScoreKind kind : testing::all_kinds())
        for (MaskKind mask : testing::all_masks()) {
          SCOPED_TRACE(target.name + ", " + std::to_string(threads) + " thread(s), " +
                       testing::kind_name(kind) + " / " + testing::mask_name(mask));
          expect_fused_matches(kind, mask);
        }
    }
  }
  set_num_threads(before);
}

TEST(Fused, BitwiseIdenticalForOneAndTwoThreads) {
  const int before = num_threads();
  for (ScoreKind kind : testing::all_kinds())
    for (MaskKind mask : testing::all_masks()) {
      SCOPED_TRACE(testing::kind_name(kind) + " / " + testing::mask_name(mask));
      set_num_threads(1);
      const Outcome one = run_attend(kind, mask, DType::F32, true, true);
      set_num_threads(2);
      const Outcome two = run_attend(kind, mask, DType::F32, true, true);
      EXPECT_TRUE(bitwise_equal(one.context, two.context));
      EXPECT_TRUE(bitwise_equal(one.weights, two.weights));
      for (size_t i = 0; i < one.grads.size(); ++i)
        EXPECT_TRUE(bitwise_equal(one.grads[i], two.grads[i]));
    }
  set_num_threads(before);
}

// Inspection weights of a row range equal those rows of the full composed weights, carry
// no gradient, and a decoder step (the last row) costs one row.
TEST(Fused, InspectionWeightsForTheRowsAskedFor) {
  const Variable q = leaf(random_tensor({kB, kTq, kD}, DType::F32, 1)),
                 k = leaf(random_tensor({kB, kTk, kD}, DType::F32, 2)),
                 v = leaf(random_tensor({kB, kTk, kDv}, DType::F32, 3));
  const MaskSpec mask{.key_lengths = {kTk, 4}, .causal = true};
  for (ScoreKind kind : {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::Cosine}) {
    SCOPED_TRACE(testing::kind_name(kind));
    AttentionOptions o{.kind = kind, .need_weights = true, .fused = false};
    const Tensor all = attend(q, k, v, mask, {}, o).weights.value();
    o.fused = true;
    for (ops::RowRange rows : {ops::RowRange{}, ops::RowRange{3, 7}, ops::RowRange{kTq - 1, kTq}}) {
      o.weight_rows = rows;
      const AttentionOutput out = attend(q, k, v, mask, {}, o);
      const int64_t end = rows.end < 0 ? kTq : rows.end;
      ASSERT_EQ(out.weights.value().shape(), Shape({kB, end - rows.begin, kTk}));
      EXPECT_FALSE(out.weights.requires_grad());
      EXPECT_TRUE(all_close(out.weights.value(), all.slice(1, rows.begin, end), 2e-6, 2e-5));
    }
  }
  AttentionOptions bad{.need_weights = true, .weight_rows = {5, 3}};
  EXPECT_THROW(attend(q, k, v, mask, {}, bad), ConfigError);
  bad.weight_rows = {0, 3};
  bad.weights_need_grad = true;  // differentiable weights come whole
  EXPECT_THROW(attend(q, k, v, mask, {}, bad), ConfigError);
}

TEST(Fused, MultiHeadEqualsComposed) {
  Rng rng(3);
  const MultiHeadAttention mha(12, 3, rng);
  for (MaskKind mask_kind : testing::all_masks()) {
    SCOPED_TRACE(testing::mask_name(mask_kind));
    const MaskSpec mask = testing::make_mask(mask_kind, 11, 9, DType::F32);
    auto go = [&](bool fused) {
      const Variable q = leaf(random_tensor({2, 11, 12}, DType::F32, 4)),
                     kv = leaf(random_tensor({2, 9, 12}, DType::F32, 5));
      const MultiHeadOutput out =
          mha.forward(q, kv, kv, mask,
                      {.need_weights = true, .head_weights = HeadWeights::PerHead, .fused = fused});
      autograd::backward(project(out.output, 6));
      return std::vector<Tensor>{out.output.value(), out.weights.value(), q.grad(), kv.grad()};
    };
    const MultiHeadParams& p = mha.params();
    auto zero = [&] {
      for (const Variable* w : {&p.wq, &p.wk, &p.wv, &p.wo, &p.bq, &p.bk, &p.bv, &p.bo})
        w->zero_grad();
    };
    zero();
    const std::vector<Tensor> f = go(true);
    const Tensor dwq = p.wq.grad().contiguous();
    zero();
    const std::vector<Tensor> c = go(false);
    EXPECT_TRUE(all_close(f[0], c[0], 2e-6, 2e-5));
    EXPECT_TRUE(all_close(f[1], c[1], 2e-6, 2e-5));
    EXPECT_TRUE(all_close(f[2], c[2], 1e-5, 1e-4));
    EXPECT_TRUE(all_close(f[3], c[3], 1e-5, 1e-4));
    EXPECT_TRUE(all_close(dwq, p.wq.grad(), 1e-5, 1e-4));
  }
}

// The cached decoder step the Transformer runs: one query row per batch row over
// pre-projected K/V heads under key padding, fused against composed.
TEST(Fused, MultiHeadDecoderStepOverCachedHeadsEqualsComposed) {
  Rng rng(7);
  const MultiHeadAttention mha(8, 2, rng);
  const Variable x = leaf(random_tensor({3, 1, 8}, DType::F32, 8)),
                 memory = leaf(random_tensor({3, 6, 8}, DType::F32, 9));
  const KeyValueHeads cache = mha.project_key_values(memory);  // [3, 2, 6, 4]
  const MaskSpec mask{.key_lengths = {6, 1, 4}};
  auto go = [&](bool fused) {
    return mha.attend_heads(
        mha.project_queries(x), cache.keys, cache.values, mask,
        {.need_weights = true, .head_weights = HeadWeights::PerHead, .fused = fused});
  };
  autograd::NoGradGuard no_grad;
  const MultiHeadOutput f = go(true), c = go(false);
  EXPECT_TRUE(all_close(f.output.value(), c.output.value(), 2e-6, 2e-5));
  EXPECT_TRUE(all_close(f.weights.value(), c.weights.value(), 2e-6, 2e-5));
}

}  // namespace
}  // namespace qkv::attention
