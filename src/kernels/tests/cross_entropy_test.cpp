// Fused cross-entropy forward/backward against the float64 reference, every SIMD target.
#include "qkv/kernels/cross_entropy.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::kOddSizes;
using testing::random_floats;
using testing::random_ints;
using testing::seed_for;

constexpr double kU = 0x1.0p-24;  // unit roundoff of float

struct Case {
  CrossEntropySpec spec;
  std::vector<float> logits;  // (rows, vocab)
  std::vector<int32_t> targets;
};

// Random logits in [-range, range]; every third row is ignored. Row 1 (when present)
// has a dominant target logit so p_t ≈ 1 (the cancellation case in backward).
Case make_case(int64_t rows, int64_t vocab, double eps, float range, int32_t ignore) {
  Case c;
  c.spec.rows = rows;
  c.spec.vocab = vocab;
  c.spec.label_smoothing = eps;
  c.spec.ignore_index = ignore;
  c.logits = random_floats(rows * vocab, seed_for(rows, vocab), -range, range);
  for (int64_t t : random_ints(rows, seed_for(vocab, rows), 0, vocab - 1))
    c.targets.push_back(int32_t(t));
  for (int64_t r = 2; r < rows; r += 3) c.targets[size_t(r)] = ignore;
  if (rows > 1 && c.targets[1] != ignore) c.logits[size_t(vocab + c.targets[1])] = range + 20.0f;
  return c;
}

// Forward error bounds (per row, x = the row, L = its lse):
//  - Σ exp(x − m) in float over at most V terms: relative error <= V·u (Higham eq. 3.5
//    for a sum of positive terms) plus ~2 u per Exp, plus ~2 u for each rescale of the
//    online sum when the running max moves (at most once per element): <= (3V + 2)·u
//    relative, which becomes an absolute error of that size after the log.
//  - Σ x in float: absolute error <= V·u·Σ|x|, weighted by ε/V in the loss.
//  - final rounding of lse / loss to float: half an ulp, i.e. u·|value|.
void check_forward(const Case& c) {
  const int64_t R = c.spec.rows, V = c.spec.vocab;
  std::vector<float> loss(static_cast<size_t>(R)), lse(static_cast<size_t>(R)),
      want_loss(static_cast<size_t>(R)), want_lse(static_cast<size_t>(R));
  cross_entropy_forward(c.logits.data(), c.targets.data(), loss.data(), lse.data(), c.spec);
  ref::cross_entropy_forward(c.logits.data(), c.targets.data(), want_loss.data(), want_lse.data(),
                             c.spec);
  for (int64_t r = 0; r < R; ++r) {
    double abs_sum = 0;
    for (int64_t v = 0; v < V; ++v) abs_sum += std::fabs(c.logits[size_t(r * V + v)]);
    const double lse_tol = double(3 * V + 2) * kU + kU * std::fabs(want_lse[size_t(r)]) + FLT_MIN;
    EXPECT_NEAR(lse[size_t(r)], want_lse[size_t(r)], lse_tol) << "row " << r;
    const double loss_tol =
        lse_tol + c.spec.label_smoothing * kU * abs_sum + kU * std::fabs(want_loss[size_t(r)]);
    if (c.targets[size_t(r)] == c.spec.ignore_index)
      EXPECT_EQ(loss[size_t(r)], 0.0f) << "ignored row " << r;
    else
      EXPECT_NEAR(loss[size_t(r)], want_loss[size_t(r)], loss_tol) << "row " << r;
  }
}

// Backward, given the same lse: dx = g·exp(x − lse) − g·ε/V (− g(1 − ε) at the target).
// x − lse in float errs by <= u·(|x| + |lse|) (one rounding of the difference), which
// exp turns into that relative error of p, plus ~2 u for Exp itself and 2 u for the
// fused multiply-add and final rounding: |err| <= |g|·(p·(u(|x|+|lse|) + 4u) + 2u·ε/V
// + u). Ignored rows must be exactly 0.
void check_backward(const Case& c) {
  const int64_t R = c.spec.rows, V = c.spec.vocab;
  std::vector<float> loss(static_cast<size_t>(R)), lse(static_cast<size_t>(R));
  ref::cross_entropy_forward(c.logits.data(), c.targets.data(), loss.data(), lse.data(), c.spec);
  const std::vector<float> dloss = random_floats(R, seed_for(R, V, 9), 0.5f, 2.0f);
  std::vector<float> got(size_t(R * V), 123.0f), want(size_t(R * V));
  cross_entropy_backward(c.logits.data(), c.targets.data(), lse.data(), dloss.data(), got.data(),
                         c.spec);
  ref::cross_entropy_backward(c.logits.data(), c.targets.data(), lse.data(), dloss.data(),
                              want.data(), c.spec);
  int64_t bad = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < V; ++v) {
      const size_t i = size_t(r * V + v);
      if (c.targets[size_t(r)] == c.spec.ignore_index) {
        if (got[i] != 0.0f && bad++ < 3) ADD_FAILURE() << "ignored row " << r << " not zero";
        continue;
      }
      const double x = c.logits[i], l = lse[size_t(r)], g = std::fabs(dloss[size_t(r)]);
      const double p = std::exp(x - l);
      const double tol = g * (p * (kU * (std::fabs(x) + std::fabs(l)) + 4 * kU) +
                              2 * kU * c.spec.label_smoothing / double(V) + kU) +
                         FLT_MIN;
      if (!(std::fabs(double(got[i]) - double(want[i])) <= tol) && bad++ < 3)
        ADD_FAILURE() << "dx[" << r << "," << v << "] = " << got[i] << " want " << want[i]
                      << " tol " << tol;
    }
  EXPECT_EQ(bad, 0);
}

TEST(CrossEntropy, ForwardAndBackwardMatchReference) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t V : kOddSizes)
      for (int64_t R : {int64_t{1}, int64_t{7}, int64_t{17}})
        for (double eps : {0.0, 0.1})
          for (float range : {1.0f, 80.0f}) {
            SCOPED_TRACE(::testing::Message()
                         << "rows=" << R << " vocab=" << V << " eps=" << eps << " range=" << range);
            const Case c = make_case(R, V, eps, range, R == 7 ? 0 : -1);
            check_forward(c);
            check_backward(c);
            if (::testing::Test::HasFailure()) return;
          }
  });
}

// A big vocabulary (the realistic case): many terms in Σ exp, rows split over threads.
TEST(CrossEntropy, LargeVocabularyAndThreadCountIndependence) {
  const Case c = make_case(24, 32000, 0.1, 30.0f, -1);
  check_forward(c);
  check_backward(c);
  const int saved = num_threads();
  std::vector<float> out[2];
  for (int t : {1, 2}) {
    set_num_threads(t);
    std::vector<float> loss(24), lse(24), dx(size_t(24 * 32000)), dloss(24, 1.0f);
    cross_entropy_forward(c.logits.data(), c.targets.data(), loss.data(), lse.data(), c.spec);
    cross_entropy_backward(c.logits.data(), c.targets.data(), lse.data(), dloss.data(), dx.data(),
                           c.spec);
    out[t - 1] = loss;
    out[t - 1].insert(out[t - 1].end(), dx.begin(), dx.end());
  }
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(out[0], out[1]));
}

// The gradient written over the logits (dlogits == logits) has the bits of the one
// written beside them, on every target and in the reference: the target's share reads
// its logit before the row is overwritten.
TEST(CrossEntropy, BackwardInPlaceOverTheLogitsHasTheSameBits) {
  for_each_simd_target([](const SimdTarget&) {
    for (int64_t V : {int64_t{1}, int64_t{17}, int64_t{1023}}) {
      SCOPED_TRACE(::testing::Message() << "vocab=" << V);
      const Case c = make_case(7, V, 0.1, 30.0f, 4);
      std::vector<float> loss(7), lse(7);
      cross_entropy_forward(c.logits.data(), c.targets.data(), loss.data(), lse.data(), c.spec);
      const std::vector<float> dloss = random_floats(7, seed_for(V, 5), 0.5f, 2.0f);
      std::vector<float> beside(c.logits.size()), over = c.logits;
      cross_entropy_backward(c.logits.data(), c.targets.data(), lse.data(), dloss.data(),
                             beside.data(), c.spec);
      cross_entropy_backward(over.data(), c.targets.data(), lse.data(), dloss.data(), over.data(),
                             c.spec);
      EXPECT_TRUE(bitwise_equal(over, beside));
      std::vector<double> x(c.logits.begin(), c.logits.end()), l(lse.begin(), lse.end()),
          g(dloss.begin(), dloss.end()), want(x.size());
      ref::cross_entropy_backward(x.data(), c.targets.data(), l.data(), g.data(), want.data(),
                                  c.spec);
      ref::cross_entropy_backward(x.data(), c.targets.data(), l.data(), g.data(), x.data(), c.spec);
      EXPECT_EQ(x, want);  // no NaN here: == is bitwise up to the sign of zero
    }
  });
}

// Logits of ±80 would overflow exp(80)·V in float without the max subtraction.
TEST(CrossEntropy, HugeLogitsStayFinite) {
  for_each_simd_target([](const SimdTarget&) {
    CrossEntropySpec s;
    s.rows = 2;
    s.vocab = 17;
    std::vector<float> x(34, -80.0f);
    for (int v = 0; v < 17; v += 2) x[size_t(v)] = 80.0f;
    x[17 + 3] = 80.0f;
    const std::vector<int32_t> t = {1, 3};  // row 0: a -80 target, row 1: the only +80
    std::vector<float> loss(2), lse(2), dx(34);
    const std::vector<float> dloss = {1.0f, 1.0f};
    cross_entropy_forward(x.data(), t.data(), loss.data(), lse.data(), s);
    cross_entropy_backward(x.data(), t.data(), lse.data(), dloss.data(), dx.data(), s);
    EXPECT_NEAR(loss[0], 160.0 + std::log(9.0), 1e-4);
    EXPECT_NEAR(loss[1], 0.0, 1e-5);
    for (float v : dx) EXPECT_TRUE(std::isfinite(v));
  });
}

// -inf logits (a masked vocabulary entry) contribute exp(-inf) = 0 to the lse, also
// when a whole SIMD lane sees nothing else. (The loss is not checked:
// Σx = -inf makes the reference's (ε/V)·Σx NaN even for ε = 0.)
TEST(CrossEntropy, NegativeInfinityLogitsGiveFiniteLse) {
  for_each_simd_target([](const SimdTarget&) {
    CrossEntropySpec s;
    s.rows = 1;
    s.vocab = 67;
    std::vector<float> x = random_floats(67, 3);
    for (int v = 0; v < 67; ++v)
      if (v % 16 != 5) x[size_t(v)] = -HUGE_VALF;
    const std::vector<int32_t> t = {5};
    float loss = 0, lse = 0, want_loss = 0, want_lse = 0;
    cross_entropy_forward(x.data(), t.data(), &loss, &lse, s);
    ref::cross_entropy_forward(x.data(), t.data(), &want_loss, &want_lse, s);
    EXPECT_NEAR(lse, want_lse, 1e-5);
    // Their gradient is exactly 0 (ε = 0): p = exp(-inf) = 0, not a tiny clamped exp.
    const float g = 1.5f;
    std::vector<float> dx(67, 123.0f);
    cross_entropy_backward(x.data(), t.data(), &lse, &g, dx.data(), s);
    for (int v = 0; v < 67; ++v)
      if (v % 16 != 5) {
        EXPECT_EQ(dx[size_t(v)], 0.0f) << "masked logit " << v;
      }
  });
}

}  // namespace
}  // namespace qkv::kernels
