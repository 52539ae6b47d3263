// Values and laws the ops promise beyond matching the kernels.
#include <limits>

#include "qkv/kernels/gemm.h"
#include "qkv/ops/activation.h"
#include "qkv/ops/additive_scores.h"
#include "qkv/ops/broadcast.h"
#include "qkv/ops/cross_entropy.h"
#include "qkv/ops/dropout.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/embedding.h"
#include "qkv/ops/layer_norm.h"
#include "qkv/ops/matmul.h"
#include "qkv/ops/normalize.h"
#include "qkv/ops/reduce.h"
#include "qkv/ops/sequence.h"
#include "qkv/ops/softmax.h"
#include "qkv/testing/tensors.h"

namespace qkv::testing {
namespace {

Tensor t64(const Shape& s, std::vector<double> v) {
  return Tensor::from(s, v);
}

TEST(OpsBehaviour, GatherRowsPacksAndScatterRowsUnpacksWithZeros) {
  // A padded [B = 2, T = 3] batch of 2-wide rows with lengths 2 and 1.
  const Tensor padded = t64({6, 2}, {1, 2, 3, 4, 0, 0, 5, 6, 0, 0, 0, 0});
  const std::vector<int64_t> rows{0, 1, 3};
  const Tensor packed = ops::gather_rows(padded, rows);
  EXPECT_EQ(packed.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ops::scatter_rows(packed, rows, 6).to_vector<double>(), padded.to_vector<double>());
  // Rows of any rank: [6, 2] seen as [3, 2, 2] -> rows 0 and 2.
  EXPECT_EQ(
      ops::gather_rows(padded.reshape({3, 2, 2}), std::vector<int64_t>{0, 2}).to_vector<double>(),
      (std::vector<double>{1, 2, 3, 4, 0, 0, 0, 0}));
  // Rows must be strictly increasing indices inside the tensor; counts must agree.
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{1, 1}, std::vector<int64_t>{2, 1},
                                          std::vector<int64_t>{-1}, std::vector<int64_t>{6}})
    EXPECT_THROW(ops::gather_rows(padded, bad), IndexError);
  EXPECT_THROW(ops::scatter_rows(packed, std::vector<int64_t>{0, 1}, 6), ShapeError);
  EXPECT_THROW(ops::scatter_rows(packed, rows, 3), IndexError);
}

TEST(OpsBehaviour, LinearIsTheProductPlusTheBias) {
  const Tensor x = t64({2, 3}, {1, 2, 3, 4, 5, 6}), w = t64({2, 3}, {1, 0, -1, 2, 1, 0});
  const Tensor y = ops::linear(x, w, t64({2}, {10, 100}));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{8, 104, 8, 113}));
  EXPECT_THROW(ops::linear(x, w, t64({3}, {0, 0, 0})), ShapeError);
  EXPECT_THROW(ops::linear(x, t64({2, 2}, {1, 0, 0, 1}), t64({2}, {0, 0})), ShapeError);
}

TEST(OpsBehaviour, MatmulSmallExample) {
  const Tensor a = t64({2, 2}, {1, 2, 3, 4}), b = t64({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(ops::matmul(a, b).to_vector<double>(), (std::vector<double>{19, 22, 43, 50}));
}

TEST(OpsBehaviour, BatchedMatmulEqualsPerBatchProducts) {
  const Tensor a = random_tensor({3, 4, 5}, DType::F64, 1),
               b = random_tensor({3, 5, 2}, DType::F64, 2);
  const Tensor c = ops::matmul(a, b);
  for (int64_t i = 0; i < 3; ++i) {
    const Tensor ai = a.slice(0, i, i + 1).reshape({4, 5}),
                 bi = b.slice(0, i, i + 1).reshape({5, 2});
    EXPECT_TRUE(bitwise_equal(c.slice(0, i, i + 1).reshape({4, 2}), ops::matmul(ai, bi)));
  }
}

// matmul_backward_into writes what matmul_backward returns, or adds it (beta 1) to what the
// target holds, for every transpose combination and batched; an undefined target skips
// its product and leaves the other alone.
TEST(OpsBehaviour, MatmulBackwardIntoWritesOrAddsTheGradients) {
  for (DType dt : {DType::F64, DType::F32}) {
    for (int t = 0; t < 4; ++t) {
      const ops::MatmulOptions o{.transpose_a = (t & 1) != 0, .transpose_b = (t & 2) != 0};
      const Tensor a = random_tensor(o.transpose_a ? Shape{3, 5, 4} : Shape{3, 4, 5}, dt, 1),
                   b = random_tensor(o.transpose_b ? Shape{3, 2, 5} : Shape{3, 5, 2}, dt, 2),
                   dy = random_tensor({3, 4, 2}, dt, 3);
      const ops::MatmulGrads want = ops::matmul_backward(dy, a, b, o);
      const Tensor da = Tensor::full(a.shape(), 7.0, dt);  // overwritten
      ops::matmul_backward_into(dy, a, b, o, {da, false}, {});
      EXPECT_TRUE(bitwise_equal(da, want.da)) << t;
      const Tensor before = random_tensor(b.shape(), dt, 4), db = before.clone();
      ops::matmul_backward_into(dy, a, b, o, {}, {db, true});
      EXPECT_TRUE(all_close(db, ops::add(before, want.db), 1e-6, 1e-6)) << t;
      if (dt == DType::F64) {  // the reference product adds its exact-order sum once
        EXPECT_TRUE(bitwise_equal(db, ops::add(before, want.db))) << t;
      }
    }
  }
}

// linear_backward_into: dx and dw with the bits of matmul_backward_into (written or
// added), the bias gradient with the bits of bias_gradient, on both GEMM backends (qkv's
// takes the sums while dW's product reads dy; OpenBLAS's path sums after it), float and
// double, and a shape with several k slices and row blocks (700 rows, 96 outputs).
TEST(OpsBehaviour, LinearBackwardIntoGivesMatmulsAndBiasGradientsBits) {
  for (const kernels::GemmBackend backend :
       {kernels::GemmBackend::Portable, kernels::GemmBackend::OpenBlas}) {
    kernels::set_gemm_backend(backend);
    for (DType dt : {DType::F64, DType::F32})
      for (const Shape& xs : {Shape{7, 5}, Shape{700, 40}}) {
        SCOPED_TRACE(kernels::gemm_backend_description() + " " + describe(Tensor::empty(xs, dt)));
        const int64_t out = xs[0] > 10 ? 96 : 3;
        const Tensor x = random_tensor(xs, dt, 1), w = random_tensor({out, xs[1]}, dt, 2),
                     dy = random_tensor({xs[0], out}, dt, 3);
        const ops::MatmulOptions wt{.transpose_a = false, .transpose_b = true};
        const Tensor want_dx = Tensor::empty(x.shape(), dt),
                     want_dw = random_tensor(w.shape(), dt, 4);
        const Tensor got_dx = Tensor::full(x.shape(), 7.0, dt), got_dw = want_dw.clone();
        ops::matmul_backward_into(dy, x, w, wt, {want_dx, false}, {want_dw, true});
        const Tensor dbias = ops::linear_backward_into(dy, x, w, {got_dx, false}, {got_dw, true});
        EXPECT_TRUE(bitwise_equal(got_dx, want_dx));
        EXPECT_TRUE(bitwise_equal(got_dw, want_dw));
        EXPECT_TRUE(bitwise_equal(dbias, ops::bias_gradient(dy)));
        // Without a dw target: dx only, the bias gradient still returned.
        EXPECT_TRUE(bitwise_equal(ops::linear_backward_into(dy, x, w, {got_dx, false}, {}),
                                  ops::bias_gradient(dy)));
      }
  }
  kernels::set_gemm_backend(kernels::GemmBackend::Auto);
}

// linear_relu and linear_backward_through_relu: the bits of the ops they fuse (the
// ReLU applied after linear; ReLU's backward after dy · w, with the ReLU's output as x),
// on both GEMM backends, float and double, at a shape with several row blocks and one
// small enough for B in place; relu_output's zeros close the gate.
TEST(OpsBehaviour, LinearReluAndItsBackwardGiveTheComposedOpsBits) {
  for (const kernels::GemmBackend backend :
       {kernels::GemmBackend::Portable, kernels::GemmBackend::OpenBlas}) {
    kernels::set_gemm_backend(backend);
    for (DType dt : {DType::F64, DType::F32})
      for (const Shape& xs : {Shape{3, 5}, Shape{700, 40}}) {
        SCOPED_TRACE(kernels::gemm_backend_description() + " " + describe(Tensor::empty(xs, dt)));
        const int64_t hidden = xs[0] > 10 ? 96 : 7, out = 11;
        const Tensor x = random_tensor(xs, dt, 1), w1 = random_tensor({hidden, xs[1]}, dt, 2),
                     b1 = random_tensor({hidden}, dt, 3), w2 = random_tensor({out, hidden}, dt, 4),
                     dy = random_tensor({xs[0], out}, dt, 5);
        const Tensor h = ops::linear_relu(x, w1, b1);
        EXPECT_TRUE(bitwise_equal(h, ops::relu(ops::linear(x, w1, b1))));
        const Tensor want =
            ops::activation_backward(ops::Activation::Relu, ops::matmul(dy, w2), h, h);
        EXPECT_TRUE(bitwise_equal(ops::linear_backward_through_relu(dy, w2, h), want));
      }
  }
  kernels::set_gemm_backend(kernels::GemmBackend::Auto);
}

TEST(OpsBehaviour, LinearReluBackwardRejectsOperandsThatDoNotFit) {
  const Tensor dy = random_tensor({4, 3}, DType::F32, 1), w = random_tensor({3, 5}, DType::F32, 2),
               h = random_tensor({4, 5}, DType::F32, 3);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::linear_backward_through_relu(dy, random_tensor({2, 5}, DType::F32, 4), h);
      },
      {"linear_backward_through_relu", "[4, 3]", "[2, 5]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::linear_backward_through_relu(dy, w, random_tensor({4, 6}, DType::F32, 4));
      },
      {"relu_output", "[4, 6]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::linear_backward_through_relu(dy, w, random_tensor({4, 5}, DType::F64, 4));
      },
      {"linear_backward_through_relu"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::linear_relu(h, w, random_tensor({5}, DType::F32, 6));  // bias must be [3]
      },
      {"linear_relu", "bias", "[N = 3]"}));
}

TEST(OpsBehaviour, MatmulBackwardIntoRejectsTargetsThatDoNotFit) {
  const Tensor a = random_tensor({4, 5}, DType::F32, 1), b = random_tensor({5, 2}, DType::F32, 2),
               dy = random_tensor({4, 2}, DType::F32, 3);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::matmul_backward_into(dy, a, b, {}, {Tensor::zeros({5, 4}, DType::F32)}, {});
      },
      {"da f32[5, 4]", "operand f32[4, 5]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::matmul_backward_into(dy, a, b, {}, {}, {Tensor::zeros({5, 2}, DType::F64)});
      },
      {"db f64[5, 2]", "operand f32[5, 2]"}));
  const Tensor wide = Tensor::zeros({2, 5}, DType::F32);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { ops::matmul_backward_into(dy, a, b, {}, {}, {wide.transpose(0, 1)}); },
      {"not contiguous"}));
}

// layer_norm_backward_into: dx written into the target or added to it with the bits of
// adding layer_norm_backward's dx (float and double), dgamma and dbeta as it returns
// them; a target of another shape or dtype is refused, naming it.
TEST(OpsBehaviour, LayerNormBackwardIntoWritesOrAddsDx) {
  for (DType dt : {DType::F64, DType::F32}) {
    const Tensor x = random_tensor({3, 70, 40}, dt, 1), gamma = random_tensor({40}, dt, 2),
                 beta = random_tensor({40}, dt, 3), dy = random_tensor(x.shape(), dt, 4);
    const ops::LayerNormResult f = ops::layer_norm(x, gamma, beta);
    const ops::LayerNormGradients want = ops::layer_norm_backward(dy, x, gamma, f.mean, f.rstd);
    const Tensor written = Tensor::full(x.shape(), 7.0, dt);
    ops::LayerNormGradients got =
        ops::layer_norm_backward_into(dy, x, gamma, f.mean, f.rstd, {written, false});
    EXPECT_FALSE(got.dx.defined());
    EXPECT_TRUE(bitwise_equal(written, want.dx));
    EXPECT_TRUE(bitwise_equal(got.dgamma, want.dgamma));
    EXPECT_TRUE(bitwise_equal(got.dbeta, want.dbeta));
    const Tensor before = random_tensor(x.shape(), dt, 5), added = before.clone();
    got = ops::layer_norm_backward_into(dy, x, gamma, f.mean, f.rstd, {added, true});
    EXPECT_TRUE(bitwise_equal(added, ops::add(before, want.dx)));
    EXPECT_TRUE(bitwise_equal(got.dbeta, want.dbeta));
  }
  const Tensor x = random_tensor({4, 6}, DType::F32, 1), gamma = random_tensor({6}, DType::F32, 2);
  const ops::LayerNormResult f = ops::layer_norm(x, gamma, random_tensor({6}, DType::F32, 3));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::layer_norm_backward_into(x, x, gamma, f.mean, f.rstd,
                                      {Tensor::zeros({6, 4}, DType::F32), true});
      },
      {"dx f32[6, 4]", "operand f32[4, 6]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::layer_norm_backward_into(x, x, gamma, f.mean, f.rstd,
                                      {Tensor::zeros({4, 6}, DType::F64), false});
      },
      {"dx f64[4, 6]"}));
}

TEST(OpsBehaviour, AdditiveScoresBackwardWritesOrAddsTheKeysGradient) {
  const Tensor qp = random_tensor({2, 1, 6}, DType::F64, 1),
               kp = random_tensor({2, 5, 6}, DType::F64, 2), v = random_tensor({6}, DType::F64, 3),
               ds = random_tensor({2, 1, 5}, DType::F64, 4);
  const ops::AdditiveScoresGradients want = ops::additive_scores_backward(ds, qp, kp, v);
  const Tensor into = Tensor::full(kp.shape(), 7.0, DType::F64);
  const ops::AdditiveScoresGradients wrote = ops::additive_scores_backward(ds, qp, kp, v, {into});
  EXPECT_TRUE(bitwise_equal(into, want.dkp));
  EXPECT_EQ(wrote.dkp.data<double>(), into.data<double>());  // the caller's storage
  EXPECT_TRUE(bitwise_equal(wrote.dqp, want.dqp));
  EXPECT_TRUE(bitwise_equal(wrote.dv, want.dv));
  const Tensor before = random_tensor(kp.shape(), DType::F64, 5), sum = before.clone();
  ops::additive_scores_backward(ds, qp, kp, v, {sum, true});
  EXPECT_TRUE(bitwise_equal(sum, ops::add(before, want.dkp)));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::additive_scores_backward(ds, qp, kp, v, {Tensor::zeros({2, 6, 5}, DType::F64)});
      },
      {"additive_scores_backward", "dkp f64[2, 6, 5]", "operand f64[2, 5, 6]"}));
}

TEST(OpsBehaviour, CrossEntropyAllIgnoredGivesZeroLossAndGradient) {
  const Tensor logits = random_tensor({3, 5}, DType::F64, 3);
  const Tensor targets = t64({3}, {-1, -1, -1});
  const ops::CrossEntropyResult r = ops::cross_entropy(logits, targets);
  EXPECT_EQ(r.counted_rows, 0);
  EXPECT_EQ(*r.loss.data<double>(), 0.0);
  const Tensor d =
      ops::cross_entropy_backward(Tensor::full({}, 1.0, DType::F64), logits, targets, r.lse);
  for (double v : d.to_vector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(OpsBehaviour, CrossEntropyIsMeanOverCountedRows) {
  const Tensor logits = random_tensor({3, 5}, DType::F64, 4);
  const Tensor one = ops::cross_entropy(logits.slice(0, 0, 1), t64({1}, {2})).loss;
  const Tensor two = ops::cross_entropy(logits.slice(0, 2, 3), t64({1}, {4})).loss;
  const Tensor all = ops::cross_entropy(logits, t64({3}, {2, -1, 4})).loss;
  EXPECT_NEAR(*all.data<double>(), (*one.data<double>() + *two.data<double>()) / 2, 1e-12);
}

TEST(OpsBehaviour, DropoutBackwardUsesTheForwardMask) {
  const Tensor x = Tensor::full({1000}, 1.0, DType::F32);
  const ops::DropoutOptions o{0.25, 9, 0, 0};
  const std::vector<float> y = ops::dropout(x, o).to_vector<float>();
  const std::vector<float> dx = ops::dropout_backward(x, o).to_vector<float>();
  EXPECT_EQ(y, dx);
  const auto dropped = std::count(y.begin(), y.end(), 0.0f);
  EXPECT_GT(dropped, 150);
  EXPECT_LT(dropped, 350);
  ops::DropoutOptions shifted = o;
  shifted.offset = 1000;
  EXPECT_NE(ops::dropout(x, shifted).to_vector<float>(), y);
}

// The recorded mask (training's path): the same forward, and a backward from the bits
// equal to the regenerating one, in F32 (the kernel) and F64 (its twin).
TEST(OpsBehaviour, DropoutRecordedMaskGivesTheRegeneratedBackward) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    const Tensor x = random_tensor({37, 29}, dtype, 6), dy = random_tensor({37, 29}, dtype, 7);
    const ops::DropoutOptions o{0.3, 11, 2, 5};
    ops::DropoutMask mask;
    const Tensor y = ops::dropout(x, o, mask);
    EXPECT_EQ(mask.numel, 37 * 29);
    EXPECT_EQ(mask.keep.size(), size_t((37 * 29 + 7) / 8));
    EXPECT_EQ(y.to_vector<double>(), ops::dropout(x, o).to_vector<double>());
    EXPECT_EQ(ops::dropout_backward_recorded(dy, mask).to_vector<double>(),
              ops::dropout_backward(dy, o).to_vector<double>());
    EXPECT_THROW(ops::dropout_backward_recorded(random_tensor({37, 28}, dtype, 8), mask),
                 ShapeError);
  }
}

// dropout_add: add(residual, dropout(x)) in one pass, the same mask recorded; F32 and F64;
// residual and x must agree.
TEST(OpsBehaviour, DropoutAddIsTheResidualPlusTheDroppedValues) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    const Tensor r = random_tensor({37, 29}, dtype, 5), x = random_tensor({37, 29}, dtype, 6);
    const ops::DropoutOptions o{0.3, 11, 2, 5};
    ops::DropoutMask fused_mask, mask;
    const Tensor y = ops::dropout_add(r, x, o, fused_mask);
    EXPECT_TRUE(bitwise_equal(y, ops::add(r, ops::dropout(x, o, mask))));
    EXPECT_EQ(fused_mask.keep, mask.keep);
    EXPECT_EQ(fused_mask.numel, mask.numel);
    EXPECT_TRUE(throws_with<ShapeError>(
        [&] {
          ops::dropout_add(random_tensor({29, 37}, dtype, 7), x, o, mask);
        },
        {"dropout_add", "[29, 37]", "[37, 29]"}));
  }
}

TEST(OpsBehaviour, FullyMaskedSoftmaxRowIsZeroNotNaN) {
  const Tensor x = random_tensor({2, 3}, DType::F32, 5);
  const std::vector<int64_t> lengths{0, 2};
  const std::vector<float> y = ops::softmax(x, {lengths, {}}).to_vector<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_NEAR(y[3] + y[4], 1.0f, 1e-6);
}

// The decoders' step writes log-probabilities over its logits: the same bits as the
// copying op, for both dtypes, a vocabulary-sized row (many vectors plus a tail) and a
// -inf score (which must stay -inf).
TEST(OpsBehaviour, LogSoftmaxInPlaceHasTheBitsOfLogSoftmax) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    for (const Shape& shape : {Shape{3, 8001}, Shape{2, 2, 5}, Shape{7}}) {
      Tensor x = random_tensor(shape, dtype, 11, 8.0);
      if (dtype == DType::F32)
        x.data<float>()[1] = -std::numeric_limits<float>::infinity();
      else
        x.data<double>()[1] = -std::numeric_limits<double>::infinity();
      const Tensor expected = ops::log_softmax(x);
      const void* storage = x.view().raw_data();
      ops::log_softmax_in_place(x);
      EXPECT_EQ(x.view().raw_data(), storage) << "wrote elsewhere";
      EXPECT_TRUE(bitwise_equal(x, expected)) << describe(x.view());
    }
  }
}

TEST(OpsBehaviour, EmbeddingRepeatedIdsAccumulate) {
  const Tensor dy = t64({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor d = ops::embedding_backward(dy, t64({3}, {1, 1, 0}), 3);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{5, 6, 4, 6, 0, 0}));
}

TEST(OpsBehaviour, AddBackwardReturnsIndependentCopies) {
  const Tensor dy = random_tensor({4}, DType::F64, 6);
  const ops::BinaryGrads g = ops::add_backward(dy);
  g.da.data<double>()[0] += 1;
  EXPECT_EQ(g.db.data<double>()[0], dy.data<double>()[0]);
}

TEST(OpsBehaviour, ReductionsOfKnownValues) {
  const Tensor x = t64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(*ops::sum(x).data<double>(), 21.0);
  EXPECT_EQ(*ops::mean(x).data<double>(), 3.5);
  EXPECT_EQ(ops::sum_last(x).to_vector<double>(), (std::vector<double>{6, 15}));
  EXPECT_EQ(ops::sum(Tensor::zeros({0}, DType::F64)).to_vector<double>(), std::vector<double>{0});
}

TEST(OpsBehaviour, L2NormalizeGivesUnitRowsAndMapsZeroToZero) {
  const Tensor x = t64({3, 2}, {3, 4, 0, 0, -1e-13, 0});
  const Tensor y = ops::l2_normalize(x);
  // Row 3 is below eps = 1e-12: divided by eps, not by its norm.
  EXPECT_TRUE(all_close(y, t64({3, 2}, {0.6, 0.8, 0, 0, -0.1, 0}), 1e-15, 1e-12));
  // The zero row's gradient is dy / eps: finite, never NaN.
  const Tensor dx = ops::l2_normalize_backward(t64({3, 2}, {1, 1, 1e-12, 0, 0, 0}), x);
  for (double v : dx.to_vector<double>()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(dx.at<double>({1, 0}), 1.0, 1e-12);
  // Gradient of a unit row is orthogonal to it: (dy − y (y·dy)) / n.
  EXPECT_NEAR(dx.at<double>({0, 0}) * 0.6 + dx.at<double>({0, 1}) * 0.8, 0.0, 1e-15);
}

TEST(OpsBehaviour, PairwiseAddSmallExampleAndBackwardSums) {
  const Tensor a = t64({1, 2, 1}, {1, 2}), c = t64({1, 3, 1}, {10, 20, 30});
  EXPECT_EQ(ops::pairwise_add(a, c).to_vector<double>(),
            (std::vector<double>{11, 21, 31, 12, 22, 32}));
  const ops::BinaryGrads g = ops::pairwise_add_backward(t64({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(g.da.to_vector<double>(), (std::vector<double>{6, 15}));
  EXPECT_EQ(g.db.to_vector<double>(), (std::vector<double>{5, 7, 9}));
}

}  // namespace
}  // namespace qkv::testing
