// Each layer's output shape and values against a float64 loop written out here, and its
// errors for bad input.
#include <cmath>
#include <vector>

#include "qkv/autograd/functions.h"
#include "qkv/nn/dropout.h"
#include "qkv/nn/embedding.h"
#include "qkv/nn/feed_forward.h"
#include "qkv/nn/layer_norm.h"
#include "qkv/nn/linear.h"
#include "qkv/nn/positions.h"
#include "qkv/ops/elementwise.h"
#include "qkv/testing/tensors.h"

namespace qkv::nn {
namespace {

using autograd::Variable;
using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_ids;
using qkv::testing::random_tensor;
using qkv::testing::throws_with;

// y[r, o] = Σ_i x[r, i] w[o, i] + b[o] over rows r of x [R, I] (b may be undefined).
Tensor affine_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t rows = x.shape().rows(), in = x.dim(-1), out = w.dim(0);
  Tensor y = Tensor::zeros({rows, out}, DType::F64);
  const Tensor xc = x.contiguous();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.defined() ? b.data<double>()[o] : 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += xc.data<double>()[r * in + i] * w.data<double>()[o * in + i];
      y.data<double>()[r * out + o] = acc;
    }
  return y;
}

// Makes a freshly initialised bias non-zero, so the value checks see it.
void randomise(const Variable& p, uint64_t seed) {
  copy_into(random_tensor(p.value().shape(), DType::F64, seed), p.value());
}

TEST(Linear, ShapesAndValuesMatchXWTransposedPlusB) {
  ParameterStore store(1, DType::F64);
  const Linear lin(store, "proj", 4, 3);
  randomise(lin.bias(), 2);
  const Variable x(random_tensor({2, 5, 4}, DType::F64, 3));
  const Variable y = lin.forward(x);
  EXPECT_EQ(y.value().shape(), (Shape{2, 5, 3}));
  const Tensor want = affine_reference(x.value(), lin.weight().value(), lin.bias().value());
  EXPECT_TRUE(all_close(y.value().reshape({10, 3}), want, 1e-14, 0));
  // A single vector and an unbiased layer.
  const Linear nobias(store, "nobias", 4, 2, false);
  EXPECT_FALSE(nobias.bias().defined());
  const Variable v(random_tensor({4}, DType::F64, 4));
  EXPECT_EQ(nobias.forward(v).value().shape(), Shape{2});
  EXPECT_TRUE(all_close(nobias.forward(v).value().reshape({1, 2}),
                        affine_reference(v.value().reshape({1, 4}), nobias.weight().value(), {}),
                        1e-14, 0));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        lin.forward(Variable(Tensor::zeros({2, 5})));
      },
      {"Linear proj", "f32[2, 5]", "[..., 4]"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { Linear(store, "bad", 0, 3); }, {"Linear bad"}));
}

TEST(Embedding, RowsScaleAndTiedProjection) {
  ParameterStore store(2, DType::F64);
  const Embedding emb(store, "emb", 7, 4, {.scale_by_sqrt_dim = true});
  const Tensor ids = random_ids({2, 3}, DType::F64, 5, 7);
  const Variable e = emb.forward(ids);
  EXPECT_EQ(e.value().shape(), (Shape{2, 3, 4}));
  const Tensor& table = emb.weight().value();
  for (int64_t i = 0; i < 6; ++i) {
    const auto id = int64_t(ids.data<double>()[i]);
    for (int64_t c = 0; c < 4; ++c)
      EXPECT_DOUBLE_EQ(e.value().data<double>()[i * 4 + c], 2.0 * table.data<double>()[id * 4 + c]);
  }
  const Variable h(random_tensor({2, 3, 4}, DType::F64, 6));
  const Variable logits = emb.project(h);
  EXPECT_EQ(logits.value().shape(), (Shape{2, 3, 7}));
  EXPECT_TRUE(all_close(logits.value().reshape({6, 7}),
                        affine_reference(h.value().reshape({6, 4}), table, {}), 1e-14, 0));
  EXPECT_TRUE(throws_with<IndexError>(
      [&] { emb.forward(Tensor::from(Shape{1}, std::vector<double>{7})); }, {"id 7"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        emb.project(Variable(Tensor::zeros({2, 5})));
      },
      {"Embedding emb", "[..., 4]"}));
}

TEST(LayerNorm, NormalisesRowsWithGammaAndBeta) {
  ParameterStore store(3, DType::F64);
  const LayerNorm norm(store, "norm", 5);
  randomise(norm.weight(), 7);
  randomise(norm.bias(), 8);
  const Variable x(random_tensor({3, 5}, DType::F64, 9, 3.0));
  const Tensor y = norm.forward(x).value();
  for (int64_t r = 0; r < 3; ++r) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < 5; ++c) m += x.value().at<double>({r, c}) / 5;
    for (int64_t c = 0; c < 5; ++c) v += std::pow(x.value().at<double>({r, c}) - m, 2) / 5;
    for (int64_t c = 0; c < 5; ++c) {
      const double want = (x.value().at<double>({r, c}) - m) / std::sqrt(v + 1e-5) *
                              norm.weight().value().data<double>()[c] +
                          norm.bias().value().data<double>()[c];
      EXPECT_NEAR(y.at<double>({r, c}), want, 1e-12);
    }
  }
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        norm.forward(Variable(Tensor::zeros({2, 4})));
      },
      {"LayerNorm norm", "[..., 5]"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { LayerNorm(store, "bad", 5, 0.0); }, {"eps"}));
}

TEST(Dropout, TrainingMasksAreSeededAndAdvanceEvalIsIdentity) {
  ParameterStore store(4);
  Dropout a(store, "enc.dropout", 0.5), same(store, "enc.dropout", 0.5);
  Dropout other(store, "dec.dropout", 0.5);
  const Variable x(Tensor::full({4096}, 1.0));
  const Tensor first = a.forward(x).value();
  EXPECT_TRUE(bitwise_equal(first, same.forward(x).value()));    // same seed, name, call
  EXPECT_FALSE(bitwise_equal(first, other.forward(x).value()));  // another layer's stream
  EXPECT_FALSE(bitwise_equal(first, a.forward(x).value()));      // the next call
  EXPECT_EQ(a.offset(), 2 * 4096u);
  int64_t kept = 0;
  for (float v : first.to_vector<float>()) {
    ASSERT_TRUE(v == 0.0f || v == 2.0f) << v;  // inverted dropout: kept values are x / (1 − p)
    kept += v != 0.0f;
  }
  EXPECT_NEAR(double(kept) / 4096, 0.5, 0.05);  // 6.4 sigma
  a.set_training(false);
  EXPECT_TRUE(a.forward(x).same_as(x));
  Dropout none(store, "none", 0.0);
  EXPECT_TRUE(none.forward(x).same_as(x));
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { Dropout(store, "bad", 1.0); }, {"Dropout bad", "p 1"}));
}

// add_to (one op, autograd::dropout_add) is the residual + forward(x) it replaces: the
// same value and gradients bit for bit, the same offset advance; in eval mode a plain add.
TEST(Dropout, AddToHasTheBitsOfAddingForward) {
  ParameterStore store(4);
  Dropout fused(store, "dec.dropout", 0.3), composed(store, "dec.dropout", 0.3);
  const Tensor r0 = random_tensor({3, 700}, DType::F32, 1),
               x0 = random_tensor({3, 700}, DType::F32, 2);
  const Tensor w = random_tensor({3, 700}, DType::F32, 3);
  std::vector<Tensor> grads;
  for (int run = 0; run < 2; ++run) {
    const Variable r(r0, true), x(x0, true);
    const Variable y = run == 0 ? fused.add_to(r, x) : autograd::add(r, composed.forward(x));
    autograd::backward(autograd::sum(autograd::mul(y, Variable(w))));
    grads.insert(grads.end(), {y.value(), r.grad(), x.grad()});
  }
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(bitwise_equal(grads[size_t(i)], grads[size_t(i + 3)])) << i;
  EXPECT_EQ(fused.offset(), composed.offset());
  EXPECT_EQ(fused.offset(), 2100u);
  fused.set_training(false);
  const Variable r(r0), x(x0);
  EXPECT_TRUE(bitwise_equal(fused.add_to(r, x).value(), ops::add(r0, x0)));
  EXPECT_EQ(fused.offset(), 2100u);
}

TEST(SinusoidalPositions, TableFollowsVaswaniAndAddsPerPosition) {
  ParameterStore store(0, DType::F64);
  const SinusoidalPositions pe(store, "pos", 50, 6);
  const Tensor& t = pe.table();
  EXPECT_EQ(t.shape(), (Shape{50, 6}));
  for (int64_t c = 0; c < 6; ++c) EXPECT_EQ(t.at<double>({0, c}), c % 2 == 0 ? 0.0 : 1.0);
  for (int64_t p : {1, 17, 49})
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = double(p) / std::pow(10000.0, 2.0 * double(i) / 6.0);
      EXPECT_DOUBLE_EQ(t.at<double>({p, 2 * i}), std::sin(angle));
      EXPECT_DOUBLE_EQ(t.at<double>({p, 2 * i + 1}), std::cos(angle));
    }
  const Variable x(random_tensor({2, 3, 6}, DType::F64, 1));
  const Tensor y = pe.forward(x, 10).value();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t c = 0; c < 6; ++c)
        EXPECT_DOUBLE_EQ(y.at<double>({b, s, c}),
                         x.value().at<double>({b, s, c}) + t.at<double>({10 + s, c}));
  EXPECT_TRUE(throws_with<ValueError>([&] { pe.forward(x, 48); }, {"pos", "[48, 51)", "50"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        pe.forward(Variable(random_tensor({2, 6}, DType::F64, 2)));
      },
      {"[B, T, 6]"}));
}

TEST(FeedForward, EqualsLinearActivationLinear) {
  for (FeedForwardActivation act : {FeedForwardActivation::Relu, FeedForwardActivation::Gelu}) {
    ParameterStore store(5, DType::F64);
    FeedForward ff(store, "ff", 4, 8, {act, 0.3});
    randomise(ff.linear1().bias(), 3);
    ff.set_training(false);  // eval: dropout is the identity
    const Variable x(random_tensor({2, 3, 4}, DType::F64, 6));
    const Variable y = ff.forward(x);
    EXPECT_EQ(y.value().shape(), (Shape{2, 3, 4}));
    Tensor hidden = affine_reference(x.value().reshape({6, 4}), ff.linear1().weight().value(),
                                     ff.linear1().bias().value());
    for (int64_t i = 0; i < hidden.numel(); ++i) {
      double& h = hidden.data<double>()[i];
      h = act == FeedForwardActivation::Relu
              ? std::max(h, 0.0)
              : 0.5 * h * (1 + std::tanh(std::sqrt(2 / M_PI) * (h + 0.044715 * h * h * h)));
    }
    const Tensor want =
        affine_reference(hidden, ff.linear2().weight().value(), ff.linear2().bias().value());
    EXPECT_TRUE(all_close(y.value().reshape({6, 4}), want, 1e-13, 0));
    EXPECT_TRUE(store.contains("ff.linear1.weight") && store.contains("ff.linear2.bias"));
  }
}

TEST(FeedForward, DropoutActsInTrainingMode) {
  ParameterStore store(6, DType::F64);
  FeedForward ff(store, "ff", 4, 64, {FeedForwardActivation::Relu, 0.5});
  const Variable x(random_tensor({3, 4}, DType::F64, 7));
  const Tensor train = ff.forward(x).value();
  ff.set_training(false);
  EXPECT_FALSE(bitwise_equal(train, ff.forward(x).value()));
}

}  // namespace
}  // namespace qkv::nn
