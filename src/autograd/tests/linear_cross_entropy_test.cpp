// The fused output projection + cross-entropy equals the composed path it replaces,
// matmul (+ add_bias) then cross_entropy -- the oracle -- in loss and in every gradient,
// for any chunk size, and is bitwise identical for 1 and 2 threads.
#include "qkv/ops/linear_cross_entropy.h"

#include <cmath>
#include <string>

#include "qkv/autograd/functions.h"
#include "qkv/base/thread_pool.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_ids;
using qkv::testing::random_tensor;

struct Problem {
  Tensor hidden, weight, bias, targets;  // bias undefined: none
};

Problem make_problem(int64_t rows, int64_t dim, int64_t vocab, DType dt, bool with_bias) {
  Problem p{random_tensor({rows, dim}, dt, 1), random_tensor({vocab, dim}, dt, 2, 0.3),
            with_bias ? random_tensor({vocab}, dt, 3) : Tensor(), random_ids({rows}, dt, 4, vocab)};
  const double pad = -1;
  for (int64_t r = 0; r < rows; r += 5) {  // every fifth row is padding
    if (dt == DType::F64)
      p.targets.data<double>()[r] = pad;
    else
      p.targets.data<float>()[r] = float(pad);
  }
  return p;
}

struct Result {
  Tensor loss, dhidden, dweight, dbias;
};

// fused: linear_cross_entropy with `chunk` rows per chunk; else the composed path.
Result run(const Problem& p, bool fused, int64_t chunk, double dloss_scale = 1.0) {
  const Variable h(p.hidden, true), w(p.weight, true);
  const Variable b = p.bias.defined() ? Variable(p.bias, true) : Variable();
  const ops::CrossEntropyOptions o{.label_smoothing = 0.1, .ignore_index = -1};
  Variable loss;
  if (fused) {
    loss = linear_cross_entropy(h, w, b, p.targets, o, chunk);
  } else {
    Variable logits = matmul(h, w, {.transpose_b = true});
    if (b.defined()) logits = add_bias(logits, b);
    loss = cross_entropy(logits, p.targets, o);
  }
  backward(scale(loss, dloss_scale));
  return {loss.value(), h.grad(), w.grad(), b.defined() ? b.grad() : Tensor()};
}

void expect_close(const Result& a, const Result& b, double tol) {
  EXPECT_TRUE(all_close(a.loss, b.loss, tol, tol));
  EXPECT_TRUE(all_close(a.dhidden, b.dhidden, tol, tol));
  EXPECT_TRUE(all_close(a.dweight, b.dweight, tol, tol));
  if (a.dbias.defined()) {
    EXPECT_TRUE(all_close(a.dbias, b.dbias, tol, tol));
  }
}

TEST(LinearCrossEntropy, EqualsComposedInFloat64ForEveryChunkSize) {
  for (const bool with_bias : {false, true}) {
    const Problem p = make_problem(23, 6, 11, DType::F64, with_bias);
    const Result composed = run(p, false, 0);
    for (const int64_t chunk : {1, 2, 7, 23, 100}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + (with_bias ? " bias" : ""));
      expect_close(run(p, true, chunk), composed, 1e-12);
    }
  }
}

TEST(LinearCrossEntropy, EqualsComposedInFloat32AtTrainingShapes) {
  // Chunks of the default size (V 3000: 1,280 rows a chunk), a ragged last one.
  const Problem p = make_problem(1500, 64, 3000, DType::F32, true);
  expect_close(run(p, true, 0), run(p, false, 0), 2e-5);
}

// The default chunk fills at most 2^22 logits and is a multiple of 256 rows when it has
// that many (dW's product over the chunk's rows then has no short last k-slice in
// qkv's GEMM); a vocabulary too large for 256 rows gets what fits, at least one row.
TEST(LinearCrossEntropy, DefaultChunkIsAMultipleOf256RowsWithinItsBudget) {
  EXPECT_EQ(ops::linear_cross_entropy_chunk_rows(8000), 512);
  EXPECT_EQ(ops::linear_cross_entropy_chunk_rows(3000), 1280);
  for (const int64_t vocab : {1, 7, 160, 3000, 8000, 16384}) {
    const int64_t rows = ops::linear_cross_entropy_chunk_rows(vocab);
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    EXPECT_EQ(rows % 256, 0);
    EXPECT_LE(rows * vocab, int64_t{1} << 22);
    EXPECT_GT((rows + 256) * vocab, int64_t{1} << 22);  // the largest such multiple
  }
  EXPECT_EQ(ops::linear_cross_entropy_chunk_rows(32000), 131);  // under 256 rows: not rounded
  EXPECT_EQ(ops::linear_cross_entropy_chunk_rows(int64_t{1} << 30), 1);
}

TEST(LinearCrossEntropy, UpstreamGradientScalesEveryGradient) {
  const Problem p = make_problem(9, 4, 7, DType::F64, true);
  expect_close(run(p, true, 2, 3.5), run(p, false, 0, 3.5), 1e-12);
}

TEST(LinearCrossEntropy, EveryRowIgnoredGivesZeroLossAndZeroGradients) {
  Problem p = make_problem(4, 3, 5, DType::F64, false);
  p.targets = Tensor::full({4}, -1, DType::F64);
  const Result r = run(p, true, 3);
  EXPECT_EQ(*r.loss.data<double>(), 0.0);
  EXPECT_TRUE(bitwise_equal(r.dhidden, Tensor::zeros({4, 3}, DType::F64)));
  EXPECT_TRUE(bitwise_equal(r.dweight, Tensor::zeros({5, 3}, DType::F64)));
}

TEST(LinearCrossEntropy, PaddedRowsAreNeverComputed) {
  // Whatever a padded row's hidden state holds (here NaN and infinity), it reaches neither
  // the loss nor any gradient: the fused op skips those rows, where the composed path
  // multiplies them by zero (0 x NaN = NaN in dW).
  for (const int64_t chunk : {2, 7, 0}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const Problem clean = make_problem(23, 6, 11, DType::F64, true);
    Problem poisoned = clean;
    poisoned.hidden = clean.hidden.clone();
    for (int64_t r = 0; r < 23; r += 5)
      for (int64_t e = 0; e < 6; ++e)
        poisoned.hidden.data<double>()[r * 6 + e] = e % 2 ? NAN : INFINITY;
    const Result a = run(clean, true, chunk), b = run(poisoned, true, chunk);
    EXPECT_TRUE(bitwise_equal(a.loss, b.loss));
    EXPECT_TRUE(bitwise_equal(a.dhidden, b.dhidden));
    EXPECT_TRUE(bitwise_equal(a.dweight, b.dweight));
    EXPECT_TRUE(bitwise_equal(a.dbias, b.dbias));
    for (int64_t r = 0; r < 23; r += 5)
      for (int64_t e = 0; e < 6; ++e) EXPECT_EQ(b.dhidden.data<double>()[r * 6 + e], 0.0);
  }
}

TEST(LinearCrossEntropy, WithoutGradModeRecordsNothingAndGivesTheSameLoss) {
  const Problem p = make_problem(9, 4, 7, DType::F64, false);
  const Variable h(p.hidden, true), w(p.weight, true);
  const Tensor with = linear_cross_entropy(h, w, Variable(), p.targets).value();
  clear_tape();
  NoGradGuard off;
  const Variable loss = linear_cross_entropy(h, w, Variable(), p.targets);
  EXPECT_EQ(tape_size(), 0u);
  EXPECT_TRUE(bitwise_equal(loss.value(), with));
}

TEST(LinearCrossEntropy, BitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  const Problem p = make_problem(700, 96, 2500, DType::F32, true);
  set_num_threads(1);
  const Result one = run(p, true, 0);
  set_num_threads(2);
  const Result two = run(p, true, 0);
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(one.loss, two.loss));
  EXPECT_TRUE(bitwise_equal(one.dhidden, two.dhidden));
  EXPECT_TRUE(bitwise_equal(one.dweight, two.dweight));
  EXPECT_TRUE(bitwise_equal(one.dbias, two.dbias));
}

TEST(LinearCrossEntropy, ShapeErrorsNameTheOp) {
  const Variable h(Tensor::zeros({3, 4}), true), w(Tensor::zeros({5, 3}), true);
  try {
    linear_cross_entropy(h, w, Variable(), Tensor::zeros({3}));
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("linear_cross_entropy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qkv::autograd
