// Adam and AdamW against a float64 reference written from the published update rules,
// the difference between L2 and decoupled weight decay, no-decay ranges, convergence on
// a quadratic, and bad input.
//
// PyTorch semantics, for readers comparing: torch.optim.Adam(params, lr=1e-3,
// betas=(0.9, 0.999), eps=1e-8, weight_decay=0) adds weight_decay·θ to the gradient (L2);
// torch.optim.AdamW(..., weight_decay=1e-2) multiplies θ by (1 - lr·weight_decay) before
// the Adam step. Both add eps to sqrt(v̂) = sqrt(v) / sqrt(1 - β2^t) and use the step size
// lr / (1 - β1^t), as the reference below does; AdamOptions{} equals Adam's defaults.
#include "qkv/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/train/schedule.h"
#include "test_util.h"

namespace qkv::train {
namespace {

using testing::bitwise_equal;
using testing::expect_error;
using testing::random_grads;
using testing::random_params;
using testing::ulps;

// Kingma & Ba (2015), Algorithm 1, in float64 and in its textbook form (m̂ and v̂ spelt
// out), with the weight decay of Adam (L2, added to g) or AdamW (Loshchilov & Hutter
// 2019, Algorithm 2 with η_t·λ = lr·wd, PyTorch's convention). decay[i] = false: no decay.
struct ReferenceAdam {
  AdamOptions o;
  std::vector<double> m, v;
  int64_t t = 0;

  ReferenceAdam(size_t n, const AdamOptions& options) : o(options), m(n, 0.0), v(n, 0.0) {}

  void step(std::vector<double>& theta, const std::vector<float>& grads, double lr,
            const std::vector<bool>& decay) {
    ++t;
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = grads[i];
      const bool d = decay[i] && o.weight_decay != 0.0;
      if (d && o.variant == AdamVariant::Adam) g += o.weight_decay * theta[i];
      if (d && o.variant == AdamVariant::AdamW) theta[i] -= lr * o.weight_decay * theta[i];
      m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g * g;
      const double m_hat = m[i] / (1.0 - std::pow(o.beta1, double(t)));
      const double v_hat = v[i] / (1.0 - std::pow(o.beta2, double(t)));
      theta[i] -= lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
  }
};

std::vector<double> to_double(const std::vector<float>& x) {
  return {x.begin(), x.end()};
}

struct Case {
  const char* name;
  AdamOptions options;
  double lr;
  bool with_no_decay;
};

const Case kCases[] = {
    {"adam defaults", {}, 1e-3, false},
    {"adam L2", {.variant = AdamVariant::Adam, .weight_decay = 0.1}, 1e-2, true},
    {"adamw", {.variant = AdamVariant::AdamW, .weight_decay = 1e-2}, 1e-2, true},
    {"adamw transformer betas",
     {.variant = AdamVariant::AdamW,
      .beta1 = 0.9,
      .beta2 = 0.98,
      .eps = 1e-9,
      .weight_decay = 0.05},
     3e-3,
     false},
    {"beta1 0", {.beta1 = 0.0, .beta2 = 0.5, .eps = 1e-6}, 1e-2, false},
};
constexpr int64_t kN = 4099;  // not a multiple of any vector width
constexpr int kSteps = 12;

std::vector<bool> decay_mask(int64_t n, std::span<const ParamRange> no_decay) {
  std::vector<bool> mask(static_cast<size_t>(n), true);
  for (const ParamRange& r : no_decay)
    for (int64_t i = r.offset; i < r.offset + r.size; ++i) mask[size_t(i)] = false;
  return mask;
}

const ParamRange kNoDecay[] = {{0, 7}, {100, 33}, {4000, 99}};

// Every step from the same state: the float32 update equals one exact step of the
// reference started from the float32 state. Bound on θ: the final subtraction rounds
// (0.5 ulp of θ); the step u = lr·m̂/(√v̂+ε) (+ lr·wd·θ) has a relative error of a few
// 2^-24 and is at most ~lr·3 (≤ 0.03 here) against |θ| ≥ 0.5, so it adds < 0.2 ulp of θ;
// scalars rounded to float (β, 1-β, step size, lr·wd) add < 2^-24 relative to u: < 0.1
// ulp. Hence 1 ulp. The moments: m = β1·m + (1-β1)·g has two rounded products, a rounded
// sum and two rounded scalars (each ≤ 2^-24 of a term), so |error| ≤ 3·2^-24·(|m| + |g|);
// v likewise with g² rounded once more; Adam's g + wd·θ rounds twice. 2^-22 covers all.
TEST(AdamReference, EachStepMatchesTheFloat64RuleWithinOneUlp) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    Adam opt(kN, c.options);
    if (c.with_no_decay) opt.set_no_decay(kNoDecay);
    const std::vector<bool> mask = decay_mask(kN, opt.no_decay());
    std::vector<float> params = random_params(kN, 1);
    double worst = 0.0;
    for (int s = 0; s < kSteps; ++s) {
      const std::vector<float> grads = random_grads(kN, 100 + uint64_t(s));
      ReferenceAdam ref(size_t(kN), c.options);
      ref.m = to_double({opt.first_moment().begin(), opt.first_moment().end()});
      ref.v = to_double({opt.second_moment().begin(), opt.second_moment().end()});
      ref.t = opt.step_count();
      const std::vector<double> m_prev = ref.m, v_prev = ref.v;
      std::vector<double> theta = to_double(params);
      const std::vector<double> theta_prev = theta;
      ref.step(theta, grads, c.lr, mask);
      opt.step(params, grads, c.lr);
      for (int64_t i = 0; i < kN; ++i) {
        const size_t k = size_t(i);
        worst = std::max(worst, ulps(params[k], theta[k]));
        ASSERT_LE(ulps(params[k], theta[k]), 1.0) << "step " << s + 1 << " element " << i;
        // |g| + wd|θ| bounds the gradient the moments see (Adam's L2 term included).
        const double g = std::fabs(grads[k]) + c.options.weight_decay * std::fabs(theta_prev[k]);
        const double m_scale = std::fabs(m_prev[k]) + g;
        const double v_scale = v_prev[k] + g * g;
        ASSERT_LE(std::fabs(opt.first_moment()[k] - ref.m[k]), 0x1p-22 * m_scale) << i;
        ASSERT_LE(std::fabs(opt.second_moment()[k] - ref.v[k]), 0x1p-22 * v_scale) << i;
      }
    }
    EXPECT_EQ(opt.step_count(), kSteps);
    RecordProperty(std::string(c.name) + " worst ulps", std::to_string(worst));
  }
}

// The same rule run independently for kSteps in float32 and float64: the errors of the
// previous paragraph add up (θ carries its error forward with factor ~1), so ≤ 1 ulp per
// step, doubled because θ may cross a power of two (the ulp halves).
TEST(AdamReference, IndependentRunsStayWithinTheAccumulatedBound) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    Adam opt(kN, c.options);
    if (c.with_no_decay) opt.set_no_decay(kNoDecay);
    ReferenceAdam ref(size_t(kN), c.options);
    const std::vector<bool> mask = decay_mask(kN, opt.no_decay());
    std::vector<float> params = random_params(kN, 2);
    std::vector<double> theta = to_double(params);
    for (int s = 0; s < kSteps; ++s) {
      const std::vector<float> grads = random_grads(kN, 200 + uint64_t(s));
      opt.step(params, grads, c.lr);
      ref.step(theta, grads, c.lr, mask);
    }
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_LE(ulps(params[size_t(i)], theta[size_t(i)]), 2.0 * kSteps) << i;
  }
}

// The first Adam step is lr·g/(|g| + ε·...) ≈ lr·sign(g) whatever the size of g (m̂ = g,
// v̂ = g²): the scale invariance the paper's sec. 2.1 describes.
TEST(Adam, FirstStepIsLearningRateTimesSignOfGradient) {
  const std::vector<float> grads = {1e-3f, -2.0f, 5e2f, -7e-2f};
  std::vector<float> params(4, 1.0f);
  Adam opt(4, {});
  opt.step(params, grads, 0.01);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(params[i], 1.0f - 0.01f * (grads[i] > 0 ? 1.0f : -1.0f), 1e-6) << i;
}

// With zero gradients only the decay acts. AdamW shrinks θ by lr·wd·θ per step
// (decoupled: m = v = 0, so the Adam part is 0 / ε = 0); Adam's L2 term goes through the moments,
// gets normalised and moves θ by ≈ lr toward 0, whatever wd is: the difference Loshchilov & Hutter
// point out.
TEST(WeightDecay, DecoupledShrinksByFactorL2MovesByLearningRate) {
  const double lr = 1e-2;
  const std::vector<float> zero(3, 0.0f);
  for (double wd : {1e-2, 1e-1}) {
    SCOPED_TRACE(wd);
    std::vector<float> pw = {1.5f, -0.75f, 0.5f}, pa = pw;
    Adam adamw(3, {.variant = AdamVariant::AdamW, .weight_decay = wd});
    Adam adam(3, {.variant = AdamVariant::Adam, .weight_decay = wd});
    adamw.step(pw, zero, lr);
    adam.step(pa, zero, lr);
    const float lr_wd = float(lr * wd);
    EXPECT_EQ(pw[0], 1.5f - lr_wd * 1.5f);
    EXPECT_EQ(pw[1], -0.75f - lr_wd * -0.75f);
    EXPECT_EQ(pw[2], 0.5f - lr_wd * 0.5f);
    // L2: m̂ = wd·θ, v̂ = (wd·θ)², so the step is lr·wd|θ|/(wd|θ| + ε) = lr to 1e-6.
    EXPECT_NEAR(pa[0], 1.5 - lr, 1e-7);
    EXPECT_NEAR(pa[1], -0.75 + lr, 1e-7);
    EXPECT_NEAR(pa[2], 0.5 - lr, 1e-7);
  }
}

TEST(WeightDecay, VariantsAgreeWithoutDecayAndDifferWithIt) {
  const std::vector<float> grads = random_grads(kN, 7);
  auto run = [&](AdamVariant variant, double wd) {
    std::vector<float> p = random_params(kN, 3);
    Adam opt(kN, {.variant = variant, .weight_decay = wd});
    for (int s = 0; s < 3; ++s) opt.step(p, grads, 1e-2);
    return p;
  };
  EXPECT_TRUE(bitwise_equal(run(AdamVariant::Adam, 0.0), run(AdamVariant::AdamW, 0.0)));
  const std::vector<float> adam = run(AdamVariant::Adam, 0.1);
  const std::vector<float> adamw = run(AdamVariant::AdamW, 0.1);
  const std::vector<float> none = run(AdamVariant::Adam, 0.0);
  int differ = 0;
  for (size_t i = 0; i < adam.size(); ++i) differ += adam[i] != adamw[i];
  EXPECT_GT(differ, kN * 9 / 10);
  // Both decays pull toward 0 compared with no decay, on average.
  double pull_adam = 0.0, pull_adamw = 0.0;
  for (size_t i = 0; i < adam.size(); ++i) {
    pull_adam += std::fabs(none[i]) - std::fabs(adam[i]);
    pull_adamw += std::fabs(none[i]) - std::fabs(adamw[i]);
  }
  EXPECT_GT(pull_adam, 0.0);
  EXPECT_GT(pull_adamw, 0.0);
}

// No-decay ranges keep their values bitwise under zero gradients (m = v = 0 gives a zero
// step); everything else decays. Ranges overlap, come unsorted and cross chunk borders.
TEST(WeightDecay, NoDecayRangesAreExemptAcrossChunkBorders) {
  const int64_t n = 3 * kOptimizerGrain + 17;
  const ParamRange ranges[] = {{kOptimizerGrain - 5, 10}, {3, 5}, {6, 10}, {n - 1, 1}};
  for (AdamVariant variant : {AdamVariant::Adam, AdamVariant::AdamW}) {
    Adam opt(n, {.variant = variant, .weight_decay = 0.1});
    opt.set_no_decay(ranges);
    ASSERT_EQ(opt.no_decay().size(), 3u);  // [3, 16) merged
    EXPECT_EQ(opt.no_decay()[0].offset, 3);
    EXPECT_EQ(opt.no_decay()[0].size, 13);
    const std::vector<float> before = random_params(n, 4);
    std::vector<float> p = before;
    opt.step(p, std::vector<float>(static_cast<size_t>(n), 0.0f), 1e-2);
    const std::vector<bool> mask = decay_mask(n, opt.no_decay());
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(i);
      if (mask[k])
        ASSERT_LT(std::fabs(p[k]), std::fabs(before[k])) << i;
      else
        ASSERT_EQ(p[k], before[k]) << i;
    }
  }
}

// f(x) = ½ Σ a_i (x_i - c_i)², gradient a ⊙ (x - c), curvatures over two decades. Adam
// with the inverse square root schedule reaches the minimum; the loss falls by > 10^8.
TEST(Adam, MinimisesAQuadratic) {
  const int64_t n = 257;
  Rng rng(5);
  std::vector<float> a(static_cast<size_t>(n)), c(static_cast<size_t>(n)),
      x(static_cast<size_t>(n), 0.0f), g(static_cast<size_t>(n));
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = std::pow(10.0f, rng.uniform(-1.0f, 1.0f));
    c[i] = rng.uniform(-3.0f, 3.0f);
  }
  auto loss = [&] {
    double f = 0.0;
    for (size_t i = 0; i < a.size(); ++i) f += 0.5 * a[i] * (x[i] - c[i]) * (x[i] - c[i]);
    return f;
  };
  const double initial = loss();
  const ScheduleOptions schedule{.kind = LrSchedule::InvSqrt, .learning_rate = 0.1, .warmup = 50};
  Adam opt(n, {});
  for (int s = 0; s < 3000; ++s) {
    for (size_t i = 0; i < a.size(); ++i) g[i] = a[i] * (x[i] - c[i]);
    opt.step(x, g, learning_rate_at(schedule, opt.step_count() + 1));
  }
  EXPECT_LT(loss(), initial * 1e-8);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], c[i], 1e-3) << i;
}

TEST(AdamErrors, BadOptionsNameTheField) {
  expect_error<ConfigError>([] { Adam(4, {.beta1 = 1.0}); }, {"beta1 = 1", "[0, 1)"});
  expect_error<ConfigError>([] { Adam(4, {.beta2 = -0.1}); }, {"beta2 = -0.1"});
  expect_error<ConfigError>([] { Adam(4, {.eps = 0.0}); }, {"eps = 0", "> 0"});
  expect_error<ConfigError>([] { Adam(4, {.weight_decay = -1.0}); }, {"weight_decay = -1"});
  expect_error<ConfigError>([] { Adam(4, {.weight_decay = std::nan("")}); }, {"weight_decay"});
  expect_error<ValueError>([] { Adam(-1, {}); }, {"size -1"});
}

TEST(AdamErrors, BadStepLeavesEverythingUnchanged) {
  Adam opt(4, {});
  std::vector<float> p = {1, 2, 3, 4}, g = {1, 1, 1, 1}, short_g = {1, 1, 1};
  expect_error<ShapeError>([&] { opt.step(p, short_g, 1e-3); }, {"grads [3]", "size [4]"});
  expect_error<ValueError>([&] { opt.step(p, g, std::nan("")); }, {"learning rate"});
  expect_error<ValueError>([&] { opt.step(p, g, -1e-3); }, {"learning rate -0.001"});
  expect_error<ValueError>([&] { opt.step(p, std::span<const float>(p), 1e-3); }, {"overlap"});
  EXPECT_EQ(opt.step_count(), 0);
  EXPECT_TRUE(bitwise_equal(p, {1, 2, 3, 4}));
  for (float m : opt.first_moment()) EXPECT_EQ(m, 0.0f);
}

TEST(AdamErrors, BadNoDecayRangesNameTheRange) {
  Adam opt(10, {});
  const ParamRange past_end[] = {{0, 2}, {8, 3}};
  expect_error<ValueError>([&] { opt.set_no_decay(past_end); }, {"range 1 [8, +3)", "[0, 10)"});
  const ParamRange empty[] = {{2, 0}};
  expect_error<ValueError>([&] { opt.set_no_decay(empty); }, {"range 0"});
  const ParamRange negative[] = {{-1, 2}};
  expect_error<ValueError>([&] { opt.set_no_decay(negative); }, {"range 0 [-1, +2)"});
}

}  // namespace
}  // namespace qkv::train
