// Equivalence laws between score kinds, an independent loop oracle at odd sizes, and
// float32 against float64.
#include <cmath>

#include "attention_test_util.h"
#include "qkv/ops/elementwise.h"

namespace qkv::attention::testing {
namespace {

using qkv::testing::all_close;
using qkv::testing::bitwise_equal;

Variable rand_var(const Shape& s, uint64_t seed, DType dtype = DType::F64) {
  return leaf(random_tensor(s, dtype, seed));
}

AttentionOutput run(const Variable& q, const Variable& k, const Variable& v, const MaskSpec& m,
                    const ScoreParams& p, AttentionOptions o) {
  o.need_weights = true;
  return attend(q, k, v, m, p, o);
}

void expect_same_output(const AttentionOutput& a, const AttentionOutput& b, double tol) {
  EXPECT_TRUE(all_close(a.context.value(), b.context.value(), tol, tol));
  EXPECT_TRUE(all_close(a.weights.value(), b.weights.value(), tol, tol));
}

TEST(AttentionLaws, BilinearWithIdentityEqualsDot) {
  const Variable q = rand_var({2, 3, 5}, 1), k = rand_var({2, 4, 5}, 2), v = rand_var({2, 4, 3}, 3);
  Tensor eye = Tensor::zeros({5, 5}, DType::F64);
  for (int64_t i = 0; i < 5; ++i) eye.at<double>({i, i}) = 1.0;
  const MaskSpec mask = make_mask(MaskKind::Combined, 3, 4, DType::F64);
  expect_same_output(run(q, k, v, mask, {.w = leaf(eye)}, {.kind = ScoreKind::General}),
                     run(q, k, v, mask, {}, {.kind = ScoreKind::Dot}), 1e-14);
}

TEST(AttentionLaws, CosineEqualsDotOnNormalisedInputs) {
  const Variable q = rand_var({2, 3, 5}, 1), k = rand_var({2, 4, 5}, 2), v = rand_var({2, 4, 3}, 3);
  const Variable qn = autograd::l2_normalize(q), kn = autograd::l2_normalize(k);
  const MaskSpec mask = make_mask(MaskKind::KeyLengths, 3, 4, DType::F64);
  expect_same_output(run(q, k, v, mask, {}, {.kind = ScoreKind::Cosine}),
                     run(qn, kn, v, mask, {}, {.kind = ScoreKind::Dot}), 1e-14);
  // Temperature τ divides the cosine: the same as scaling the normalised dot by 1/τ.
  expect_same_output(run(q, k, v, mask, {}, {.kind = ScoreKind::Cosine, .temperature = 0.25}),
                     run(qn, kn, v, mask, {}, {.kind = ScoreKind::ScaledDot, .scale = 4.0}), 1e-14);
  autograd::clear_tape();
}

TEST(AttentionLaws, ScaledDotWithScaleOneEqualsDotAndDefaultIsInverseSqrtDk) {
  const Variable q = rand_var({2, 3, 4}, 1), k = rand_var({2, 5, 4}, 2), v = rand_var({2, 5, 3}, 3);
  expect_same_output(run(q, k, v, {}, {}, {.kind = ScoreKind::ScaledDot, .scale = 1.0}),
                     run(q, k, v, {}, {}, {.kind = ScoreKind::Dot}), 0.0);
  // Dk = 4: 1/sqrt(4) = 0.5 exactly, so q/2 under dot must agree to rounding.
  const Variable half_q = leaf(ops::scale(q.value(), 0.5));
  expect_same_output(run(q, k, v, {}, {}, {.kind = ScoreKind::ScaledDot}),
                     run(half_q, k, v, {}, {}, {.kind = ScoreKind::Dot}), 1e-15);
}

TEST(AttentionLaws, AdditiveScoresMatchTheFormula) {
  // One query, two keys, A = 2: e_j = vᵀ tanh(W q + U k_j + b) computed by hand.
  const Tensor q = Tensor::from(Shape{1, 1, 1}, std::vector<double>{0.5});
  const Tensor k = Tensor::from(Shape{1, 2, 1}, std::vector<double>{1.0, -2.0});
  const Tensor v = Tensor::from(Shape{1, 2, 1}, std::vector<double>{3.0, 7.0});
  const ScoreParams p{.w = leaf(Tensor::from(Shape{1, 2}, std::vector<double>{1.0, -1.0})),
                      .u = leaf(Tensor::from(Shape{1, 2}, std::vector<double>{0.5, 2.0})),
                      .b = leaf(Tensor::from(Shape{2}, std::vector<double>{0.1, 0.2})),
                      .v = leaf(Tensor::from(Shape{2}, std::vector<double>{1.5, -0.5}))};
  auto e = [](double kj) {
    return 1.5 * std::tanh(0.5 + 0.5 * kj + 0.1) - 0.5 * std::tanh(-0.5 + 2.0 * kj + 0.2);
  };
  const double w0 = 1.0 / (1.0 + std::exp(e(-2.0) - e(1.0)));
  const AttentionOutput out = run(leaf(q), leaf(k), leaf(v), {}, p, {.kind = ScoreKind::Additive});
  EXPECT_NEAR(out.weights.value().at<double>({0, 0, 0}), w0, 1e-14);
  EXPECT_NEAR(out.context.value().at<double>({0, 0, 0}), 3.0 * w0 + 7.0 * (1 - w0), 1e-13);
}

// Scaled dot by plain loops: the oracle at odd head dims and lopsided (Tq, Tk).
Tensor naive_scaled_dot(const Tensor& q, const Tensor& k, const Tensor& v,
                        const std::vector<int64_t>& lengths, bool causal) {
  const int64_t nb = q.dim(0), tq = q.dim(1), tk = k.dim(1), d = q.dim(2), dv = v.dim(2);
  Tensor out = Tensor::zeros({nb, tq, dv}, DType::F64);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> s(size_t(tk), -INFINITY);
      double mx = -INFINITY, total = 0;
      for (int64_t j = 0; j < std::min(tk, lengths[size_t(b)]); ++j) {
        if (causal && j > i + tk - tq) continue;
        double dotp = 0;
        for (int64_t c = 0; c < d; ++c) dotp += q.at<double>({b, i, c}) * k.at<double>({b, j, c});
        s[size_t(j)] = dotp / std::sqrt(double(d));
        mx = std::max(mx, s[size_t(j)]);
      }
      if (mx == -INFINITY) continue;
      for (double& x : s) total += (x = std::exp(x - mx));
      for (int64_t j = 0; j < tk; ++j)
        for (int64_t c = 0; c < dv; ++c)
          out.at<double>({b, i, c}) += s[size_t(j)] / total * v.at<double>({b, j, c});
    }
  return out;
}

TEST(AttentionLaws, OddHeadDimsAndLopsidedLengthsMatchLoopOracle) {
  const std::vector<std::pair<int64_t, int64_t>> lengths = {{1, 239}, {3, 99}, {33, 33}};
  uint64_t seed = 40;
  for (int64_t d : {1, 7, 59})
    for (auto [tq, tk] : lengths)
      for (bool causal : {false, true}) {
        SCOPED_TRACE("d " + std::to_string(d) + " Tq " + std::to_string(tq) + " Tk " +
                     std::to_string(tk) + (causal ? " causal" : ""));
        const Tensor q = random_tensor({2, tq, d}, DType::F64, ++seed),
                     k = random_tensor({2, tk, d}, DType::F64, ++seed),
                     v = random_tensor({2, tk, 3}, DType::F64, ++seed);
        const std::vector<int64_t> keep = {tk, std::max<int64_t>(1, tk / 2)};
        const MaskSpec mask{.key_lengths = keep, .causal = causal};
        const AttentionOutput out = attend(leaf(q, false), leaf(k, false), leaf(v, false), mask, {},
                                           {.kind = ScoreKind::ScaledDot});
        EXPECT_TRUE(
            all_close(out.context.value(), naive_scaled_dot(q, k, v, keep, causal), 1e-12, 1e-10));
        // float32 agrees with float64 within float rounding.
        const AttentionOutput o32 =
            attend(leaf(q.to(DType::F32), false), leaf(k.to(DType::F32), false),
                   leaf(v.to(DType::F32), false), mask, {}, {.kind = ScoreKind::ScaledDot});
        EXPECT_TRUE(all_close(o32.context.value(), out.context.value(), 2e-5, 1e-4));
      }
}

TEST(AttentionLaws, Float32AgreesWithFloat64ForEveryKindValuesAndGradients) {
  for (ScoreKind kind : all_kinds()) {
    SCOPED_TRACE(kind_name(kind));
    const int64_t dq = 6, dk = key_dim(kind, dq);
    std::vector<Tensor> in = {random_tensor({2, 5, dq}, DType::F64, 1),
                              random_tensor({2, 7, dk}, DType::F64, 2),
                              random_tensor({2, 7, 4}, DType::F64, 3)};
    for (Tensor& p : param_tensors(kind, dq, dk, 5, DType::F64, 9)) in.push_back(p);
    std::vector<std::vector<Tensor>> results;
    for (DType dtype : {DType::F64, DType::F32}) {
      std::vector<Variable> vars;
      for (const Tensor& t : in) vars.push_back(leaf(t.to(dtype)));
      const AttentionOutput out =
          run(vars[0], vars[1], vars[2], make_mask(MaskKind::Combined, 5, 7, dtype),
              params_from(kind, vars, 3), {.kind = kind});
      autograd::backward(autograd::add(project(out.context, 1), project(out.weights, 2)));
      results.push_back({out.context.value(), out.weights.value()});
      for (const Variable& x : vars) results.back().push_back(x.grad());
    }
    for (size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(all_close(results[1][i], results[0][i], 1e-4, 1e-3)) << "output " << i;
  }
}

}  // namespace
}  // namespace qkv::attention::testing
