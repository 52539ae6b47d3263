// attend() and MultiHeadAttention gradient-checked in float64 against central differences:
// every score kind under every mask kind, w.r.t. q, k, v and the score parameters.
#include "qkv/autograd/gradcheck.h"

#include "attention_test_util.h"
#include "qkv/attention/multi_head.h"

namespace qkv::attention::testing {
namespace {

using Vars = std::vector<Variable>;

constexpr int64_t kB = 2, kTq = 3, kTk = 4, kDq = 3, kDv = 2, kHidden = 3;

// Objective: a weighted sum of the context and of the weights, so both outputs' Jacobians
// are checked (the weights of a softmax alone sum to a constant). The weights are asked
// for with weights_need_grad (inspection weights carry no gradient).
Variable objective(const AttentionOutput& out) {
  return autograd::add(project(out.context, 5), project(out.weights, 6));
}

void check_kind_under_mask(ScoreKind kind, MaskKind mask_kind) {
  const int64_t dk = key_dim(kind, kDq);
  std::vector<Tensor> inputs = {random_tensor({kB, kTq, kDq}, DType::F64, 1),
                                random_tensor({kB, kTk, dk}, DType::F64, 2),
                                random_tensor({kB, kTk, kDv}, DType::F64, 3)};
  for (Tensor& p : param_tensors(kind, kDq, dk, kHidden, DType::F64, 10)) inputs.push_back(p);
  const MaskSpec mask = make_mask(mask_kind, kTq, kTk, DType::F64);
  const AttentionOptions options{
      .kind = kind, .temperature = 0.7, .need_weights = true, .weights_need_grad = true};
  const autograd::GradcheckReport r = autograd::gradcheck(
      [&](const Vars& v) {
        return objective(attend(v[0], v[1], v[2], mask, params_from(kind, v, 3), options));
      },
      inputs);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.elements_checked, [&] {
    int64_t n = 0;
    for (const Tensor& t : inputs) n += t.numel();
    return n;
  }());
}

TEST(AttentionGradcheck, EveryScoreKindUnderEveryMaskKind) {
  for (ScoreKind kind : all_kinds())
    for (MaskKind mask : all_masks()) {
      SCOPED_TRACE(kind_name(kind) + " / " + mask_name(mask));
      check_kind_under_mask(kind, mask);
    }
}

TEST(AttentionGradcheck, AdditiveWithoutBiasAndExplicitScale) {
  const std::vector<Tensor> inputs = {
      random_tensor({1, 2, 3}, DType::F64, 1), random_tensor({1, 5, 2}, DType::F64, 2),
      random_tensor({1, 5, 4}, DType::F64, 3), random_tensor({3, 2}, DType::F64, 4),
      random_tensor({2, 2}, DType::F64, 5),    random_tensor({2}, DType::F64, 6)};
  const autograd::GradcheckReport r = autograd::gradcheck(
      [](const Vars& v) {
        ScoreParams p{.w = v[3], .u = v[4], .b = {}, .v = v[5]};
        return objective(
            attend(v[0], v[1], v[2], {}, p,
                   {.kind = ScoreKind::Additive, .need_weights = true, .weights_need_grad = true}));
      },
      inputs);
  EXPECT_TRUE(r.passed) << r.message;
  const autograd::GradcheckReport s = autograd::gradcheck(
      [](const Vars& v) {
        return objective(attend(v[0], v[1], v[2], {.causal = true}, {},
                                {.kind = ScoreKind::ScaledDot,
                                 .scale = -0.3,
                                 .need_weights = true,
                                 .weights_need_grad = true}));
      },
      {inputs[0], random_tensor({1, 5, 3}, DType::F64, 7), inputs[2]});
  EXPECT_TRUE(s.passed) << s.message;
}

TEST(AttentionGradcheck, SelfAttentionPassesOneVariableAsQKAndV) {
  // Gradients from the three roles accumulate into one variable.
  for (ScoreKind kind : {ScoreKind::ScaledDot, ScoreKind::Cosine}) {
    SCOPED_TRACE(kind_name(kind));
    const autograd::GradcheckReport r = autograd::gradcheck(
        [kind](const Vars& v) {
          const AttentionOutput out =
              attend(v[0], v[0], v[0], {.causal = true}, {}, {.kind = kind, .need_weights = false});
          EXPECT_FALSE(out.weights.defined());
          return project(out.context, 5);
        },
        {random_tensor({2, 4, 3}, DType::F64, 1)});
    EXPECT_TRUE(r.passed) << r.message;
  }
}

// MHA (E = 8, H = 2) w.r.t. inputs and all eight parameters, per-head and averaged weights.
void check_multi_head(HeadWeights mode, MaskKind mask_kind) {
  const int64_t e = 8, tq = 3, tk = 4;
  std::vector<Tensor> inputs = {random_tensor({2, tq, e}, DType::F64, 1),
                                random_tensor({2, tk, e}, DType::F64, 2),
                                random_tensor({2, tk, e}, DType::F64, 3)};
  for (uint64_t i = 0; i < 4; ++i) inputs.push_back(random_tensor({e, e}, DType::F64, 10 + i, 0.4));
  for (uint64_t i = 0; i < 4; ++i) inputs.push_back(random_tensor({e}, DType::F64, 20 + i, 0.1));
  const MaskSpec mask = make_mask(mask_kind, tq, tk, DType::F64);
  const autograd::GradcheckReport r = autograd::gradcheck(
      [&](const Vars& v) {
        const MultiHeadAttention mha({v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]}, 2);
        const MultiHeadOutput out =
            mha.forward(v[0], v[1], v[2], mask,
                        {.need_weights = true, .head_weights = mode, .weights_need_grad = true});
        return autograd::add(project(out.output, 5), project(out.weights, 6));
      },
      inputs);
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(AttentionGradcheck, MultiHeadE8H2) {
  check_multi_head(HeadWeights::PerHead, MaskKind::Combined);
  check_multi_head(HeadWeights::Averaged, MaskKind::FullyMaskedRow);
  check_multi_head(HeadWeights::Averaged, MaskKind::None);
}

// The steps the Transformer runs (project_self / project_key_values / project_queries,
// then attend_heads) w.r.t. the inputs and all eight parameters: self-attention under a
// causal mask and cross-attention under key padding, with differentiable weights.
void check_multi_head_steps(bool self_attention) {
  const int64_t e = 8, tq = 3, tk = self_attention ? tq : 4;
  std::vector<Tensor> inputs = {random_tensor({2, tq, e}, DType::F64, 1)};
  if (!self_attention) inputs.push_back(random_tensor({2, tk, e}, DType::F64, 2));
  const size_t p = inputs.size();  // the parameters follow the inputs
  for (uint64_t i = 0; i < 4; ++i) inputs.push_back(random_tensor({e, e}, DType::F64, 30 + i, 0.4));
  for (uint64_t i = 0; i < 4; ++i) inputs.push_back(random_tensor({e}, DType::F64, 40 + i, 0.1));
  const MaskSpec mask = self_attention ? MaskSpec{.causal = true} : MaskSpec{.key_lengths = {4, 2}};
  const autograd::GradcheckReport r = autograd::gradcheck(
      [&](const Vars& v) {
        const MultiHeadAttention mha(
            {v[p], v[p + 1], v[p + 2], v[p + 3], v[p + 4], v[p + 5], v[p + 6], v[p + 7]}, 2);
        const MultiHeadOptions options{
            .need_weights = true, .head_weights = HeadWeights::PerHead, .weights_need_grad = true};
        MultiHeadOutput out;
        if (self_attention) {
          const QueryKeyValueHeads h = mha.project_self(v[0]);
          out = mha.attend_heads(h.queries, h.keys, h.values, mask, options);
        } else {
          const KeyValueHeads memory = mha.project_key_values(v[1]);
          out = mha.attend_heads(mha.project_queries(v[0]), memory.keys, memory.values, mask,
                                 options);
        }
        return autograd::add(project(out.output, 5), project(out.weights, 6));
      },
      inputs);
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(AttentionGradcheck, MultiHeadStepsSelfAndCross) {
  check_multi_head_steps(true);
  check_multi_head_steps(false);
}

}  // namespace
}  // namespace qkv::attention::testing
