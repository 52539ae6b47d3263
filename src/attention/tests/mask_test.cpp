// What masks promise, for every score kind: padded keys with lengths equal the truncated
// sequence, causality, weights that are a distribution over visible keys, decoder steps
// that equal rows of the full causal pass, and fully masked rows that stay zero and finite.
#include <cmath>

#include "attention_test_util.h"

namespace qkv::attention::testing {
namespace {

using qkv::testing::all_close;
using qkv::testing::bitwise_equal;

// Inputs for one kind: q [B, Tq, 4], k [B, Tk, Dk], v [B, Tk, 3] and its parameters.
struct Inputs {
  Tensor q, k, v;
  std::vector<Tensor> params;
};

Inputs make_inputs(ScoreKind kind, int64_t batch, int64_t tq, int64_t tk, uint64_t seed) {
  const int64_t dk = key_dim(kind, 4);
  return {random_tensor({batch, tq, 4}, DType::F64, seed),
          random_tensor({batch, tk, dk}, DType::F64, seed + 1),
          random_tensor({batch, tk, 3}, DType::F64, seed + 2),
          param_tensors(kind, 4, dk, 5, DType::F64, seed + 3)};
}

AttentionOutput run(ScoreKind kind, const Inputs& in, const MaskSpec& mask) {
  std::vector<Variable> params;
  for (const Tensor& p : in.params) params.push_back(leaf(p, false));
  return attend(leaf(in.q, false), leaf(in.k, false), leaf(in.v, false), mask,
                params_from(kind, params, 0), {.kind = kind, .need_weights = true});
}

// Rows [begin, end) of axis 1 (the time axis), as a contiguous tensor.
Tensor rows(const Tensor& t, int64_t begin, int64_t end) {
  return t.slice(1, begin, end).contiguous();
}

TEST(AttentionMasks, PaddedKeysWithLengthsEqualTheTruncatedSequence) {
  for (ScoreKind kind : all_kinds()) {
    SCOPED_TRACE(kind_name(kind));
    // Batch of one: 5 real keys padded to 9 with garbage.
    const Inputs padded = make_inputs(kind, 1, 3, 9, 10);
    Inputs truncated = padded;
    truncated.k = rows(padded.k, 0, 5);
    truncated.v = rows(padded.v, 0, 5);
    const AttentionOutput a = run(kind, padded, {.key_lengths = {5}});
    const AttentionOutput b = run(kind, truncated, {});
    EXPECT_TRUE(all_close(a.context.value(), b.context.value(), 1e-14, 1e-12));
    EXPECT_TRUE(all_close(a.weights.value().slice(2, 0, 5), b.weights.value(), 1e-15, 1e-12));
    EXPECT_TRUE(
        all_close(a.weights.value().slice(2, 5, 9), Tensor::zeros({1, 3, 4}, DType::F64), 0, 0));
  }
}

TEST(AttentionMasks, CausalOutputAtTIgnoresLaterInputs) {
  for (ScoreKind kind : all_kinds()) {
    SCOPED_TRACE(kind_name(kind));
    // Self-attention shape (Tq = Tk = 6); change everything after t = 2.
    const Inputs in = make_inputs(kind, 2, 6, 6, 20);
    Inputs changed = make_inputs(kind, 2, 6, 6, 90);
    changed.params = in.params;
    for (Tensor* pair : {&changed.q, &changed.k, &changed.v}) {
      const Tensor& orig = pair == &changed.q ? in.q : pair == &changed.k ? in.k : in.v;
      copy_into(orig.slice(1, 0, 3), pair->slice(1, 0, 3));
    }
    const AttentionOutput a = run(kind, in, {.causal = true});
    const AttentionOutput b = run(kind, changed, {.causal = true});
    EXPECT_TRUE(bitwise_equal(rows(a.context.value(), 0, 3), rows(b.context.value(), 0, 3)));
    EXPECT_FALSE(bitwise_equal(rows(a.context.value(), 3, 6), rows(b.context.value(), 3, 6)));
  }
}

// weights >= 0, Σ over visible keys = 1 (or 0 for a fully masked row), 0 on masked keys;
// visibility recomputed here from the MaskSpec fields.
void expect_distribution(const Tensor& w, const MaskSpec& m) {
  const int64_t nb = w.dim(0), tq = w.dim(1), tk = w.dim(2);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < tq; ++i) {
      double total = 0;
      bool any_visible = false;
      for (int64_t j = 0; j < tk; ++j) {
        bool visible = m.key_lengths.empty() || j < m.key_lengths[size_t(b)];
        if (m.causal && j > i + tk - tq) visible = false;
        const Tensor& a = m.allowed;
        if (a.defined())
          visible &= (a.rank() == 2 ? a.at<double>({i, j}) : a.at<double>({b, i, j})) == 1.0;
        if (m.bias.defined() && m.bias.rank() == 2 && std::isinf(m.bias.at<double>({i, j})))
          visible = false;
        const double x = w.at<double>({b, i, j});
        EXPECT_GE(x, 0.0);
        if (!visible) {
          EXPECT_EQ(x, 0.0) << b << " " << i << " " << j;
        }
        any_visible |= visible;
        total += x;
      }
      EXPECT_NEAR(total, any_visible ? 1.0 : 0.0, 1e-14) << b << " " << i;
    }
}

TEST(AttentionMasks, WeightsAreADistributionOverVisibleKeys) {
  for (ScoreKind kind : all_kinds())
    for (MaskKind mk : all_masks()) {
      SCOPED_TRACE(kind_name(kind) + " / " + mask_name(mk));
      const MaskSpec mask = make_mask(mk, 4, 6, DType::F64);
      expect_distribution(run(kind, make_inputs(kind, 2, 4, 6, 30), mask).weights.value(), mask);
    }
}

TEST(AttentionMasks, AllowedZeroEqualsMinusInfinityBias) {
  const Inputs in = make_inputs(ScoreKind::ScaledDot, 2, 3, 5, 40);
  const Tensor allowed = pattern_allowed(2, 3, 5, DType::F64);
  Tensor bias = Tensor::zeros({2, 3, 5}, DType::F64);
  for (int64_t i = 0; i < bias.numel(); ++i)
    if (allowed.data<double>()[i] == 0.0) bias.data<double>()[i] = -INFINITY;
  EXPECT_TRUE(bitwise_equal(run(ScoreKind::ScaledDot, in, {.allowed = allowed}).context.value(),
                            run(ScoreKind::ScaledDot, in, {.bias = bias}).context.value()));
}

TEST(AttentionMasks, DecoderStepEqualsLastRowOfTheFullCausalPass) {
  for (ScoreKind kind : all_kinds()) {
    SCOPED_TRACE(kind_name(kind));
    const Inputs full = make_inputs(kind, 2, 7, 7, 50);
    Inputs step = full;
    step.q = rows(full.q, 6, 7);  // Tq = 1: the newest query sees every key
    const MaskSpec lengths{.key_lengths = {7, 5}, .causal = true};
    const AttentionOutput a = run(kind, full, lengths);
    const AttentionOutput b = run(kind, step, lengths);
    EXPECT_TRUE(all_close(b.context.value(), rows(a.context.value(), 6, 7), 1e-15, 1e-13));
    EXPECT_TRUE(all_close(b.weights.value(), rows(a.weights.value(), 6, 7), 1e-15, 1e-13));
  }
}

TEST(AttentionMasks, FullyMaskedRowsGiveZeroContextAndZeroGradients) {
  for (ScoreKind kind : all_kinds())
    for (DType dtype : {DType::F64, DType::F32}) {
      SCOPED_TRACE(kind_name(kind) + " " + std::string(dtype_name(dtype)));
      const Inputs in = make_inputs(kind, 2, 3, 4, 60);
      std::vector<Variable> vars;
      for (const Tensor& t : {in.q, in.k, in.v}) vars.push_back(leaf(t.to(dtype)));
      for (const Tensor& t : in.params) vars.push_back(leaf(t.to(dtype)));
      // Batch row 0 sees no key; so nothing of it may reach the output or the gradients.
      const AttentionOutput out =
          attend(vars[0], vars[1], vars[2], {.key_lengths = {0, 4}}, params_from(kind, vars, 3),
                 {.kind = kind, .need_weights = true});
      autograd::backward(autograd::add(project(out.context, 1), project(out.weights, 2)));
      const Tensor zeros = Tensor::zeros({1, 3, 4}, dtype);
      EXPECT_TRUE(bitwise_equal(out.context.value().slice(0, 0, 1), zeros.slice(2, 0, 3)));
      EXPECT_TRUE(bitwise_equal(out.weights.value().slice(0, 0, 1), zeros));
      for (size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(bitwise_equal(vars[i].grad().slice(0, 0, 1),
                                  Tensor::zeros(vars[i].grad().slice(0, 0, 1).shape(), dtype)))
            << "input " << i;
      for (const Variable& x : vars)
        for (double g : x.grad().to(DType::F64).to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
    }
}

TEST(AttentionMasks, CosineOfZeroVectorsStaysFinite) {
  Inputs in = make_inputs(ScoreKind::Cosine, 1, 2, 3, 70);
  in.q = Tensor::zeros(in.q.shape(), DType::F64);
  copy_into(Tensor::zeros({1, 1, 4}, DType::F64), in.k.slice(1, 0, 1));  // key 0 zero too
  const AttentionOutput out = run(ScoreKind::Cosine, in, {});
  // Zero vectors score 0 against everything: uniform weights.
  for (double w : out.weights.value().to_vector<double>()) EXPECT_NEAR(w, 1.0 / 3, 1e-15);
}

}  // namespace
}  // namespace qkv::attention::testing
