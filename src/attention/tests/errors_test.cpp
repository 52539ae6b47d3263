// Bad input to attend() and MultiHeadAttention raises a typed qkv::Error naming the shapes
// or values at fault.
#include <cmath>

#include "attention_test_util.h"
#include "qkv/attention/multi_head.h"

namespace qkv::attention::testing {
namespace {

using qkv::testing::throws_with;

Variable f64(const Shape& s) {
  return leaf(random_tensor(s, DType::F64, 1), false);
}

// q [2, 3, 4], k [2, 5, 4], v [2, 5, 2] with the given mask/params/options.
void run(const MaskSpec& m, const ScoreParams& p = {}, const AttentionOptions& o = {}) {
  attend(f64({2, 3, 4}), f64({2, 5, 4}), f64({2, 5, 2}), m, p, o);
}

TEST(AttentionErrors, InputShapesAndDtypes) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        attend(f64({3, 4}), f64({2, 5, 4}), f64({2, 5, 2}), {}, {}, {});
      },
      {"q", "f64[3, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        attend(f64({2, 3, 4}), f64({3, 5, 4}), f64({3, 5, 2}), {}, {}, {});
      },
      {"f64[2, 3, 4]", "f64[3, 5, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        attend(f64({2, 3, 4}), f64({2, 5, 4}), f64({2, 6, 2}), {}, {}, {});
      },
      {"f64[2, 6, 2]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        attend(f64({2, 3, 4}), f64({2, 5, 3}), f64({2, 5, 2}), {}, {}, {.kind = ScoreKind::Dot});
      },
      {"Dq == Dk", "f64[2, 5, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        attend(f64({2, 0, 4}), f64({2, 5, 4}), f64({2, 5, 2}), {}, {}, {});
      },
      {"empty"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        attend(f64({2, 3, 4}), leaf(random_tensor({2, 5, 4}, DType::F32, 1)), f64({2, 5, 2}), {},
               {}, {});
      },
      {"mixed", "f32[2, 5, 4]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        attend(Variable(), f64({2, 5, 4}), f64({2, 5, 2}), {}, {}, {});
      },
      {"undefined"}));
}

TEST(AttentionErrors, KeyLengths) {
  EXPECT_TRUE(
      throws_with<ShapeError>([] { run({.key_lengths = {5}}); }, {"1 key_lengths", "B = 2"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        run({.key_lengths = {5, 6}});
      },
      {"key_lengths[1] = 6", "[0, Tk = 5]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { run({.key_lengths = {-1, 2}}); }, {"= -1"}));
}

TEST(AttentionErrors, BiasAndAllowed) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        run({.bias = random_tensor({3, 4}, DType::F64, 1)});
      },
      {"bias", "f64[3, 4]", "[3, 5]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        run({.bias = random_tensor({3, 5}, DType::F32, 1)});
      },
      {"bias", "dtype"}));
  for (double bad : {double(NAN), double(INFINITY)}) {
    const Tensor b = Tensor::full({2, 3, 5}, bad, DType::F64);
    EXPECT_TRUE(throws_with<ValueError>([&] { run({.bias = b}); }, {"bias holds"}));
  }
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        run({.allowed = Tensor::full({2, 5}, 1.0, DType::F64)});
      },
      {"allowed", "f64[2, 5]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        run({.allowed = Tensor::full({3, 5}, 0.5, DType::F64)});
      },
      {"allowed", "0.5", "0 (masked)"}));
  Tensor two = Tensor::full({2, 3, 5}, 1.0, DType::F64);
  two.at<double>({1, 2, 3}) = 2.0;
  EXPECT_TRUE(throws_with<ValueError>([&] { run({.allowed = two}); }, {"holds 2", "[1, 2, 3]"}));
  // allowed is boolean: either float dtype is accepted.
  EXPECT_NO_THROW(run({.allowed = Tensor::full({3, 5}, 1.0, DType::F32)}));
}

TEST(AttentionErrors, ScoreParamsAndOptions) {
  const AttentionOptions general{.kind = ScoreKind::General}, additive{.kind = ScoreKind::Additive};
  EXPECT_TRUE(throws_with<ConfigError>([&] { run({}, {}, general); }, {"general", "params.w"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        run({}, {.w = f64({4, 3})}, general);
      },
      {"params.w", "f64[4, 3]", "[4, 4]"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { run({}, {}, additive); }, {"additive", "params.w"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] {
        run({}, {.w = f64({4, 3}), .v = f64({3})}, additive);
      },
      {"params.u"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] {
        run({}, {.w = f64({4, 3}), .u = f64({4, 3})}, additive);
      },
      {"params.v"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        run({}, {.w = f64({4, 3}), .u = f64({4, 3}), .b = f64({2}), .v = f64({3})}, additive);
      },
      {"params.b", "f64[2]", "[3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        run({}, {.w = f64({5, 3})}, additive);
      },
      {"f64[5, 3]"}));
  for (double t : {0.0, -1.0, double(NAN)})
    EXPECT_TRUE(throws_with<ConfigError>(
        [t] { run({}, {}, {.kind = ScoreKind::Cosine, .temperature = t}); }, {"temperature"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [] { run({}, {}, {.kind = ScoreKind::ScaledDot, .scale = INFINITY}); }, {"scale"}));
}

TEST(MultiHeadErrors, ConfigShapesAndInputs) {
  Rng rng(1);
  EXPECT_TRUE(throws_with<ConfigError>([&] { MultiHeadAttention(10, 3, rng); }, {"10", "heads 3"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { MultiHeadAttention(8, 0, rng); }, {"heads 0"}));
  MultiHeadParams p;
  for (Variable* w : {&p.wq, &p.wk, &p.wv, &p.wo}) *w = f64({6, 6});
  EXPECT_TRUE(throws_with<ConfigError>([&] { MultiHeadAttention(p, 4); }, {"6", "heads 4"}));
  p.wv = f64({6, 5});
  EXPECT_TRUE(throws_with<ShapeError>([&] { MultiHeadAttention(p, 2); }, {"wv", "f64[6, 5]"}));
  p.wv = f64({6, 6});
  p.bo = f64({5});
  EXPECT_TRUE(throws_with<ShapeError>([&] { MultiHeadAttention(p, 2); }, {"bo", "f64[5]"}));
  p.bo = Variable();  // biases may be absent (PyTorch's bias=False)
  const MultiHeadAttention mha(p, 2);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        mha.forward(f64({2, 3, 5}), f64({2, 4, 6}), f64({2, 4, 6}), {});
      },
      {"query", "f64[2, 3, 5]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        mha.forward(f64({2, 3, 6}), f64({2, 4, 6}), f64({2, 5, 6}), {});
      },
      {"f64[2, 5, 6]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        const Variable x = leaf(random_tensor({2, 3, 6}, DType::F32, 1));
        mha.forward(x, x, x, {});
      },
      {"query", "dtype"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        mha.forward(f64({2, 3, 6}), f64({2, 4, 6}), f64({2, 4, 6}), {.key_lengths = {4}});
      },
      {"B = 2"}));
}

}  // namespace
}  // namespace qkv::attention::testing
