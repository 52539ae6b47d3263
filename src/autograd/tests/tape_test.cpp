// The tape records only what it must, accumulates, and refuses non-scalar losses.
#include <thread>
#include <utility>

#include "qkv/autograd/functions.h"
#include "qkv/ops/additive_scores.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/matmul.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::random_tensor;
using qkv::testing::throws_with;

Variable leaf(const Shape& s, uint64_t seed) {
  return Variable(random_tensor(s, DType::F64, seed), true);
}

TEST(Tape, NoGradGuardRecordsNothing) {
  clear_tape();
  const Variable x = leaf({3}, 1);
  {
    const NoGradGuard guard;
    EXPECT_FALSE(grad_mode_enabled());
    const Variable y = sum(tanh(x));
    EXPECT_EQ(tape_size(), 0u);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(throws_with<ValueError>([&] { backward(y); }, {"does not require grad"}));
  }
  EXPECT_TRUE(grad_mode_enabled());
  const Variable y = sum(tanh(x));
  EXPECT_EQ(tape_size(), 2u);
  clear_tape();
}

TEST(Tape, ConstantsAreNotRecorded) {
  clear_tape();
  const Variable c(random_tensor({3}, DType::F64, 2), false);
  const Variable y = sum(mul(c, c));
  EXPECT_EQ(tape_size(), 0u);
  EXPECT_FALSE(y.requires_grad());
}

TEST(Tape, GradientsAccumulateWhenAVariableIsUsedTwice) {
  const Variable x = leaf({4}, 3);
  backward(sum(add(x, x)));  // d/dx Σ (x + x) = 2
  for (double g : x.grad().to_vector<double>()) EXPECT_EQ(g, 2.0);
  backward(sum(mul(x, x)));  // + 2x, accumulated onto the previous gradient
  const std::vector<double> xs = x.value().to_vector<double>(), gs = x.grad().to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_DOUBLE_EQ(gs[i], 2.0 + 2.0 * xs[i]);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

// matmul's backward adds straight into a gradient its operand already has (a weight used
// at every step): the sum over uses must equal the per-use gradients added up, including
// an operand used on both sides (x·xᵀ) and a bound (parameter) gradient.
TEST(Tape, MatmulAddsIntoGradientsItsOperandsAlreadyHave) {
  const Variable w = leaf({3, 3}, 5), x1 = leaf({2, 3}, 6);
  const Variable x2(random_tensor({4, 3}, DType::F64, 7));  // a constant: no gradient
  const Tensor grads = Tensor::zeros({3, 3}, DType::F64);
  const Variable bound(random_tensor({3, 3}, DType::F64, 8), true);
  bound.bind_storage(bound.value().clone(), grads);
  const Variable y1 = matmul(x1, w), y2 = matmul(x2, w, {.transpose_b = true}),
                 y3 = matmul(w, w, {.transpose_b = true}), y4 = matmul(x1, bound),
                 y5 = matmul(x2, bound);
  backward(add(add(add(sum(y1), sum(y2)), add(sum(y3), sum(y4))), sum(y5)));
  const auto ones = [](const Variable& y) {
    return Tensor::full(y.value().shape(), 1.0, DType::F64);
  };
  const ops::MatmulGrads g1 = ops::matmul_backward(ones(y1), x1.value(), w.value());
  const ops::MatmulGrads g2 =
      ops::matmul_backward(ones(y2), x2.value(), w.value(), {.transpose_b = true});
  const ops::MatmulGrads g3 =
      ops::matmul_backward(ones(y3), w.value(), w.value(), {.transpose_b = true});
  const Tensor want_w = ops::add(ops::add(g1.db, g2.db), ops::add(g3.da, g3.db));
  EXPECT_TRUE(qkv::testing::all_close(w.grad(), want_w, 1e-12, 1e-12));
  EXPECT_TRUE(qkv::testing::all_close(
      x1.grad(), ops::add(g1.da, ops::matmul_backward(ones(y4), x1.value(), bound.value()).da),
      1e-12, 1e-12));
  EXPECT_FALSE(x2.grad().defined());
  const Tensor want_bound = ops::add(ops::matmul_backward(ones(y4), x1.value(), bound.value()).db,
                                     ops::matmul_backward(ones(y5), x2.value(), bound.value()).db);
  EXPECT_TRUE(qkv::testing::all_close(grads, want_bound, 1e-12, 1e-12));
}

// additive_scores adds the keys' gradient into the one kp already has (a decoder reads the
// same projected keys at every step).
TEST(Tape, AdditiveScoresAddsIntoTheKeysGradient) {
  const Variable q1 = leaf({2, 1, 4}, 9), q2 = leaf({2, 1, 4}, 10), kp = leaf({2, 3, 4}, 11),
                 v = leaf({4}, 12);
  const Variable s1 = additive_scores(q1, kp, v), s2 = additive_scores(q2, kp, v);
  backward(add(sum(s1), sum(s2)));
  const auto ones = [](const Variable& y) {
    return Tensor::full(y.value().shape(), 1.0, DType::F64);
  };
  const Tensor want =
      ops::add(ops::additive_scores_backward(ones(s1), q1.value(), kp.value(), v.value()).dkp,
               ops::additive_scores_backward(ones(s2), q2.value(), kp.value(), v.value()).dkp);
  EXPECT_TRUE(qkv::testing::all_close(kp.grad(), want, 1e-12, 1e-12));
}

TEST(Tape, BackwardClearsTheTapeAndSkipsUnrelatedEntries) {
  clear_tape();
  const Variable x = leaf({2}, 4), unrelated = leaf({2}, 5);
  const Variable other = tanh(unrelated);
  const Variable loss = sum(x);
  EXPECT_EQ(tape_size(), 2u);
  backward(loss);
  EXPECT_EQ(tape_size(), 0u);
  EXPECT_FALSE(unrelated.grad().defined());
  EXPECT_TRUE(x.grad().defined());
}

TEST(Tape, BackwardOnNonScalarThrowsShapeError) {
  const Variable y = tanh(leaf({2, 3}, 6));
  EXPECT_TRUE(throws_with<ShapeError>([&] { backward(y); }, {"f64[2, 3]", "one element"}));
  clear_tape();
}

TEST(Tape, OneElementNonScalarLossIsAccepted) {
  const Variable x = leaf({1, 1}, 7);
  backward(tanh(x));
  EXPECT_TRUE(x.grad().defined());
}

TEST(Tape, TapeAndGradModeArePerThread) {
  clear_tape();
  const Variable x = leaf({2}, 8);
  const NoGradGuard guard;  // only this thread
  std::size_t recorded_there = 0;
  std::thread([&] {
    const Variable y = sum(x);
    recorded_there = tape_size();
    backward(y);
  }).join();
  EXPECT_EQ(recorded_there, 1u);
  EXPECT_EQ(tape_size(), 0u);
  EXPECT_TRUE(x.grad().defined());
}

TEST(Tape, GradientOfATransposedViewIsStoredContiguous) {
  const Variable x = leaf({2, 3}, 9);
  const Variable w(random_tensor({3, 2}, DType::F64, 10), false);
  backward(sum(mul(transpose(x, 0, 1), w)));
  ASSERT_TRUE(x.grad().is_contiguous());
  EXPECT_TRUE(qkv::testing::bitwise_equal(x.grad(), w.value().transpose(0, 1)));
}

TEST(Tape, IntermediateGradientsAreDroppedAsBackwardRuns) {
  const Variable x = leaf({3}, 12);
  const Variable y = tanh(x);
  const Variable loss = sum(y);
  backward(loss);
  // Like PyTorch: only leaves (and retain_grad() variables) keep their gradient; the
  // Transformer's step held every intermediate gradient until backward returned.
  EXPECT_FALSE(y.grad().defined());
  EXPECT_FALSE(loss.grad().defined());
  EXPECT_TRUE(x.grad().defined());
}

TEST(Tape, RetainGradKeepsAnIntermediateGradient) {
  const Variable x = leaf({3}, 13);
  const Variable y = tanh(x);
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  backward(sum(mul(y, y)));  // d/dy Σ y² = 2y
  ASSERT_TRUE(y.grad().defined());
  EXPECT_TRUE(qkv::testing::bitwise_equal(y.grad(), ops::scale(y.value(), 2.0)));
}

TEST(Tape, SavedTensorsAreFreedByBackward) {
  const Variable x = leaf({3}, 14);
  const Tensor w = random_tensor({3}, DType::F64, 15);
  Variable loss;
  {
    const Variable cw(w, false);
    loss = sum(mul(cw, x));  // mul's closure holds cw, and thereby w
  }
  EXPECT_FALSE(w.sole_owner());
  backward(loss);
  EXPECT_TRUE(w.sole_owner());  // the closure is gone although `loss` is still held
}

TEST(Tape, FirstGradientIsAdoptedOnlyWhenNothingElseSharesIt) {
  const Variable x = leaf({2, 2}, 16);
  Tensor fresh = random_tensor({2, 2}, DType::F64, 17);
  const double* storage = fresh.data<double>();
  x.accumulate_grad(std::move(fresh));
  EXPECT_EQ(x.grad().data<double>(), storage);  // adopted: no copy
  x.zero_grad();

  const Tensor shared = random_tensor({2, 2}, DType::F64, 18);
  Tensor handle = shared;
  x.accumulate_grad(std::move(handle));
  EXPECT_NE(x.grad().data<double>(), shared.data<double>());  // copied: `shared` sees it
  EXPECT_TRUE(qkv::testing::bitwise_equal(x.grad(), shared));
  x.accumulate_grad(Tensor(shared));  // later gradients add, as before
  EXPECT_TRUE(qkv::testing::bitwise_equal(x.grad(), ops::scale(shared, 2.0)));
  x.zero_grad();

  Tensor transposed = random_tensor({2, 2}, DType::F64, 19).transpose(0, 1);
  x.accumulate_grad(std::move(transposed));
  EXPECT_TRUE(x.grad().is_contiguous());  // a strided view is copied into contiguous form
}

// The tape hands an intermediate's gradient to its backward, and pass-through
// backwards (reshape, add, add_bias) move it on instead of copying it. A retained
// gradient is never handed over: no two variables may share gradient storage, or an
// accumulation into one would change the other.
TEST(Tape, PassedOnGradientsAreNeverShared) {
  const Variable x = leaf({2, 3}, 20);
  const Variable h = tanh(x);
  const Variable r = reshape(h, {6});
  h.retain_grad();
  r.retain_grad();
  const Tensor c = random_tensor({6}, DType::F64, 21);
  backward(sum(mul(r, Variable(c))));
  EXPECT_TRUE(qkv::testing::bitwise_equal(r.grad(), c));
  EXPECT_TRUE(qkv::testing::bitwise_equal(h.grad(), c.reshape({2, 3})));
  EXPECT_NE(r.grad().data<double>(), h.grad().data<double>());

  const Variable a = leaf({3}, 22), b = leaf({3}, 23), bias = leaf({3}, 24);
  const Tensor d = random_tensor({3}, DType::F64, 25);
  backward(sum(mul(add_bias(add(a, b), bias), Variable(d))));
  for (const Variable* v : {&a, &b, &bias}) EXPECT_TRUE(qkv::testing::bitwise_equal(v->grad(), d));
  EXPECT_NE(a.grad().data<double>(), b.grad().data<double>());
  EXPECT_NE(a.grad().data<double>(), bias.grad().data<double>());
  EXPECT_NE(b.grad().data<double>(), bias.grad().data<double>());
  // Reused: later gradients add into each one alone.
  backward(sum(mul(a, Variable(d))));
  EXPECT_TRUE(qkv::testing::bitwise_equal(a.grad(), ops::scale(d, 2.0)));
  EXPECT_TRUE(qkv::testing::bitwise_equal(b.grad(), d));
}

TEST(Tape, VariableChecksGradientShape) {
  const Variable x = leaf({2}, 11);
  EXPECT_TRUE(throws_with<ShapeError>([&] { x.accumulate_grad(random_tensor({3}, DType::F64, 1)); },
                                      {"f64[3]", "f64[2]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { Variable().value(); }, {"undefined"}));
}

}  // namespace
}  // namespace qkv::autograd
