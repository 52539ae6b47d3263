#include "qkv/kernels/additive_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::random_floats;
using testing::seed_for;
using testing::to_double;
using testing::to_float;

constexpr double kEps = std::numeric_limits<float>::epsilon();

struct Inputs {
  AdditiveScoreSpec spec;
  std::vector<float> qp, kp, v, ds;
};

// Pre-activations in [-2, 2]: tanh is neither linear nor saturated there.
Inputs make_inputs(AdditiveScoreSpec s, uint32_t seed) {
  return {s, random_floats(s.batch * s.tq * s.hidden, seed, -1, 1),
          random_floats(s.batch * s.tk * s.hidden, seed + 1, -1, 1),
          random_floats(s.hidden, seed + 2, -1, 1),
          random_floats(s.batch * s.tq * s.tk, seed + 3, -1, 1)};
}

struct Outputs {
  std::vector<float> scores, dqp, dkp, dv;
};

Outputs run_kernel(const Inputs& in) {
  const AdditiveScoreSpec& s = in.spec;
  Outputs o{std::vector<float>(size_t(s.batch * s.tq * s.tk), 7.0f),
            std::vector<float>(in.qp.size(), 7.0f), std::vector<float>(in.kp.size(), 7.0f),
            std::vector<float>(size_t(s.hidden), 7.0f)};
  std::vector<float> scratch(in.qp.size(), 7.0f);
  additive_scores_forward(s, in.qp.data(), in.kp.data(), in.v.data(), o.scores.data());
  additive_scores_backward(s, in.qp.data(), in.kp.data(), in.v.data(), in.ds.data(),
                           {o.dqp.data(), o.dkp.data(), o.dv.data(), scratch.data()});
  return o;
}

Outputs run_reference(const Inputs& in) {
  const AdditiveScoreSpec& s = in.spec;
  const auto qp = to_double(in.qp), kp = to_double(in.kp), v = to_double(in.v),
             ds = to_double(in.ds);
  std::vector<double> scores(size_t(s.batch * s.tq * s.tk)), dqp(qp.size()), dkp(kp.size()),
      dv(v.size()), scratch(qp.size());
  ref::additive_scores_forward(s, qp.data(), kp.data(), v.data(), scores.data());
  ref::additive_scores_backward(s, qp.data(), kp.data(), v.data(), ds.data(),
                                {dqp.data(), dkp.data(), dv.data(), scratch.data()});
  return {to_float(scores), to_float(dqp), to_float(dkp), to_float(dv)};
}

// Each score is a float sum of A terms of size <= 1 with tanh accurate to a few ulp:
// absolute error ~ (A + 8)·eps. dqp/dkp sum Tk (Tq) terms of size <= 1; dv sums Tq·Tk.
void expect_matches_reference(const AdditiveScoreSpec& s, uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "batch " << s.batch << " tq " << s.tq << " tk " << s.tk << " A " << s.hidden);
  const Inputs in = make_inputs(s, seed);
  const Outputs got = run_kernel(in), want = run_reference(in);
  const double a = double(s.hidden), tq = double(s.tq), tk = double(s.tk);
  EXPECT_TRUE(all_close(got.scores, want.scores, {0, (a + 8) * 4 * kEps, 8}));
  EXPECT_TRUE(all_close(got.dqp, want.dqp, {0, (tk + 8) * 4 * kEps, 8}));
  EXPECT_TRUE(all_close(got.dkp, want.dkp, {0, (tq + 8) * 4 * kEps, 8}));
  EXPECT_TRUE(all_close(got.dv, want.dv, {0, (s.batch * tq * tk + 8) * 4 * kEps, 8}));
}

TEST(AdditiveAttention, MatchesReferenceAtOddShapes) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t hidden : {1, 7, 15, 16, 17, 63, 64, 65, 256})
      expect_matches_reference({2, 3, 5, hidden}, seed_for(1, hidden));
    // Decoder step (tq = 1), long keys, a single key, batch 1.
    expect_matches_reference({4, 1, 239, 33}, seed_for(2));
    expect_matches_reference({1, 17, 1, 65}, seed_for(3));
    expect_matches_reference({3, 31, 29, 128}, seed_for(4));
  });
}

// Masked keys arrive as ds == 0 and are skipped: the result must equal the reference,
// which multiplies by the zero instead.
TEST(AdditiveAttention, ZeroGradientPairsContributeNothing) {
  for_each_simd_target([](const SimdTarget&) {
    Inputs in = make_inputs({2, 4, 9, 17}, seed_for(5));
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t j = 5; j < 9; ++j) in.ds[size_t(r * 9 + j)] = 0.0f;
    const Outputs got = run_kernel(in), want = run_reference(in);
    EXPECT_TRUE(all_close(got.dkp, want.dkp, {0, 16 * kEps, 8}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t j = 5; j < 9; ++j)
        for (int64_t a = 0; a < 17; ++a) ASSERT_EQ(got.dkp[size_t((b * 9 + j) * 17 + a)], 0.0f);
  });
}

// Large pre-activations saturate tanh: scores stay finite and gradients vanish
// (1 − t² → 0) instead of turning into NaN.
TEST(AdditiveAttention, SaturatedInputsStayFinite) {
  for_each_simd_target([](const SimdTarget&) {
    Inputs in = make_inputs({1, 3, 4, 20}, seed_for(6));
    for (float& x : in.qp) x *= 1e4f;
    const Outputs got = run_kernel(in), want = run_reference(in);
    for (float x : got.scores) ASSERT_TRUE(std::isfinite(x));
    EXPECT_TRUE(all_close(got.scores, want.scores, {0, 64 * kEps, 8}));
    EXPECT_TRUE(all_close(got.dqp, want.dqp, {0, 16 * kEps, 8}));
  });
}

// add_dkp: the keys' gradient is added to what dkp holds (a decoder reads the same keys at
// every step); dqp and dv are unaffected. The reference adds its fresh gradient exactly;
// the kernel may fuse v ⊙ sum into the addition (one rounding less), so within an ulp.
TEST(AdditiveAttention, AddIntoDkpAddsTheFreshGradient) {
  const Inputs in = make_inputs({3, 1, 37, 65}, seed_for(8));
  const AdditiveScoreSpec& s = in.spec;
  const std::vector<float> before = random_floats(in.kp.size(), seed_for(9), -1, 1);
  for_each_simd_target([&](const SimdTarget&) {
    const Outputs fresh = run_kernel(in);
    std::vector<float> dqp(in.qp.size()), dkp = before, dv(size_t(s.hidden)), scratch(in.qp.size());
    additive_scores_backward(s, in.qp.data(), in.kp.data(), in.v.data(), in.ds.data(),
                             {dqp.data(), dkp.data(), dv.data(), scratch.data(), true});
    std::vector<float> want(before.size());
    for (size_t n = 0; n < want.size(); ++n) want[n] = before[n] + fresh.dkp[n];
    EXPECT_TRUE(all_close(dkp, want, {0, 2 * kEps, 2}));
    EXPECT_TRUE(bitwise_equal(dqp, fresh.dqp));
    EXPECT_TRUE(bitwise_equal(dv, fresh.dv));
  });
  const auto qp = to_double(in.qp), kp = to_double(in.kp), v = to_double(in.v),
             ds = to_double(in.ds);
  std::vector<double> dqp(qp.size()), fresh(kp.size()), dv(v.size()), scratch(qp.size());
  ref::additive_scores_backward(s, qp.data(), kp.data(), v.data(), ds.data(),
                                {dqp.data(), fresh.data(), dv.data(), scratch.data()});
  std::vector<double> added = to_double(before);
  ref::additive_scores_backward(s, qp.data(), kp.data(), v.data(), ds.data(),
                                {dqp.data(), added.data(), dv.data(), scratch.data(), true});
  for (size_t n = 0; n < added.size(); ++n) ASSERT_EQ(added[n], double(before[n]) + fresh[n]);
}

TEST(AdditiveAttention, BitwiseIdenticalForOneAndTwoThreads) {
  const Inputs in = make_inputs({3, 70, 50, 96}, seed_for(7));
  const int saved = num_threads();
  set_num_threads(1);
  const Outputs one = run_kernel(in);
  set_num_threads(2);
  const Outputs two = run_kernel(in);
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(one.scores, two.scores));
  EXPECT_TRUE(bitwise_equal(one.dqp, two.dqp));
  EXPECT_TRUE(bitwise_equal(one.dkp, two.dkp));
  EXPECT_TRUE(bitwise_equal(one.dv, two.dv));
}

}  // namespace
}  // namespace qkv::kernels
