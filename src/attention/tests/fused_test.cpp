// attend() and MultiHeadAttention on the fused kernel (AttentionOptions::fused) against
// the composed path (the oracle, fused = false): context and every input gradient
// within float32 rounding, for each fusable score kind × prefix mask kind, and bitwise
// identical for 1 and 2 threads.
#include <gtest/gtest.h>

#include <vector>

#include "attention_test_util.h"
#include "qkv/attention/attention.h"
#include "qkv/attention/multi_head.h"
#include "qkv/base/thread_pool.h"

namespace qkv::attention {
namespace {

using autograd::Variable;
using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;
using testing::leaf;
using testing::project;

// The masks the fused kernel takes: key lengths (one batch row of length 0: fully
// masked rows), causal (Tq > Tk: the first queries see nothing) and both.
std::vector<MaskSpec> prefix_masks() {
  std::vector<MaskSpec> m(4);
  m[1].key_lengths = {0, 6};
  m[2].causal = true;
  m[3].key_lengths = {9, 4};
  m[3].causal = true;
  return m;
}

struct Grads {
  Tensor context, dq, dk, dv;
};

Grads run_attend(ScoreKind kind, const MaskSpec& mask, bool fused, bool need_weights = false) {
  const Variable q = leaf(random_tensor({2, 11, 8}, DType::F32, 1)),
                 k = leaf(random_tensor({2, 9, 8}, DType::F32, 2)),
                 v = leaf(random_tensor({2, 9, 5}, DType::F32, 3));
  const AttentionOptions o{
      .kind = kind, .temperature = 0.6, .need_weights = need_weights, .fused = fused};
  const AttentionOutput out = attend(q, k, v, mask, {}, o);
  autograd::backward(project(out.context, 9));
  return {out.context.value(), q.grad(), k.grad(), v.grad()};
}

TEST(Fused, EqualsComposedForEveryDotKindAndPrefixMask) {
  for (ScoreKind kind : {ScoreKind::Dot, ScoreKind::ScaledDot, ScoreKind::Cosine}) {
    const std::vector<MaskSpec> masks = prefix_masks();
    for (size_t m = 0; m < masks.size(); ++m) {
      SCOPED_TRACE(testing::kind_name(kind) + " mask " + std::to_string(m));
      const Grads f = run_attend(kind, masks[m], true), c = run_attend(kind, masks[m], false);
      EXPECT_TRUE(all_close(f.context, c.context, 2e-6, 2e-5));
      EXPECT_TRUE(all_close(f.dq, c.dq, 1e-5, 1e-4));
      EXPECT_TRUE(all_close(f.dk, c.dk, 1e-5, 1e-4));
      EXPECT_TRUE(all_close(f.dv, c.dv, 1e-5, 1e-4));
      // need_weights keeps the fused context (weights come from the composed softmax).
      EXPECT_TRUE(bitwise_equal(run_attend(kind, masks[m], true, true).context, f.context));
    }
  }
}

TEST(Fused, BitwiseIdenticalForOneAndTwoThreads) {
  const int before = num_threads();
  for (const MaskSpec& mask : prefix_masks()) {
    set_num_threads(1);
    const Grads one = run_attend(ScoreKind::ScaledDot, mask, true);
    set_num_threads(2);
    const Grads two = run_attend(ScoreKind::ScaledDot, mask, true);
    EXPECT_TRUE(bitwise_equal(one.context, two.context));
    EXPECT_TRUE(bitwise_equal(one.dq, two.dq));
    EXPECT_TRUE(bitwise_equal(one.dk, two.dk));
    EXPECT_TRUE(bitwise_equal(one.dv, two.dv));
  }
  set_num_threads(before);
}

TEST(Fused, MultiHeadEqualsComposed) {
  Rng rng(3);
  const MultiHeadAttention mha(12, 3, rng);
  for (const MaskSpec& mask : prefix_masks()) {
    auto go = [&](bool fused) {
      const Variable q = leaf(random_tensor({2, 11, 12}, DType::F32, 4)),
                     kv = leaf(random_tensor({2, 9, 12}, DType::F32, 5));
      const MultiHeadOutput out = mha.forward(q, kv, kv, mask, {.fused = fused});
      autograd::backward(project(out.output, 6));
      return Grads{out.output.value(), q.grad(), kv.grad(), {}};
    };
    const MultiHeadParams& p = mha.params();
    auto zero = [&] {
      for (const Variable* w : {&p.wq, &p.wk, &p.wv, &p.wo, &p.bq, &p.bk, &p.bv, &p.bo})
        w->zero_grad();
    };
    zero();
    const Grads f = go(true);
    const Tensor dwq = p.wq.grad().contiguous();
    zero();
    const Grads c = go(false);
    EXPECT_TRUE(all_close(f.context, c.context, 2e-6, 2e-5));
    EXPECT_TRUE(all_close(f.dq, c.dq, 1e-5, 1e-4));
    EXPECT_TRUE(all_close(f.dk, c.dk, 1e-5, 1e-4));
    EXPECT_TRUE(all_close(dwq, p.wq.grad(), 1e-5, 1e-4));
  }
}

}  // namespace
}  // namespace qkv::attention
