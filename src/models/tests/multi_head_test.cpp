// The Transformer's attention layers are attention::MultiHeadAttention over parameters
// in the model's store: the same names and initial values nn::Linear gives them (what
// model.safetensors files hold; files are read by name), trained in place, with the q, k,
// v weights and biases back to back so that self-attention projects in one GEMM.
#include "detail/multi_head.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "qkv/attention/attention.h"
#include "qkv/autograd/functions.h"
#include "qkv/nn/linear.h"
#include "qkv/testing/tensors.h"

namespace qkv::models {
namespace {

using autograd::Variable;
using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

// Registration order: the stacked q/k/v weights, their biases, the output projection.
const std::vector<std::string> kProjectionNames = {
    "q_proj.weight", "k_proj.weight", "v_proj.weight",   "q_proj.bias",
    "k_proj.bias",   "v_proj.bias",   "out_proj.weight", "out_proj.bias"};

TEST(TransformerMultiHead, RegistersTheNamesAndInitialValuesOfFourLinearLayers) {
  nn::ParameterStore store(5), linear_store(5);
  const attention::MultiHeadAttention mha = detail::make_multi_head(store, "enc.self_attn", 12, 3);
  for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"})
    nn::Linear(linear_store, nn::child_name("enc.self_attn", name), 12, 12);
  ASSERT_EQ(store.size(), kProjectionNames.size());
  for (size_t i = 0; i < kProjectionNames.size(); ++i) {
    const nn::Parameter& p = store.parameters()[i];
    EXPECT_EQ(p.name, "enc.self_attn." + kProjectionNames[i]);
    EXPECT_TRUE(bitwise_equal(p.variable.value(), linear_store.get(p.name).value())) << p.name;
  }
  EXPECT_EQ(mha.heads(), 3);
  EXPECT_EQ(mha.embed_dim(), 12);
  EXPECT_THROW(detail::make_multi_head(store, "bad", 10, 3), ConfigError);
}

TEST(TransformerMultiHead, TrainsTheStoresParametersEvenAfterTheArenaGrows) {
  nn::ParameterStore store(6);
  const attention::MultiHeadAttention mha = detail::make_multi_head(store, "dec.cross_attn", 8, 2);
  store.add("later", {4096}, nn::zeros_init());  // grows the arena: every parameter rebound
  const Variable x(random_tensor({2, 3, 8}, DType::F32, 1), false);
  autograd::backward(autograd::sum(mha.forward(x, x, x, {}).output));
  for (size_t i = 0; i < kProjectionNames.size(); ++i) {
    const nn::Parameter& p = store.parameters()[i];
    // The layer's parameters are the store's: same storage, gradients in the arena.
    const attention::MultiHeadParams& w = mha.params();
    const std::vector<const Variable*> mine = {&w.wq, &w.wk, &w.wv, &w.bq,
                                               &w.bk, &w.bv, &w.wo, &w.bo};
    EXPECT_EQ(mine[i]->value().data<float>(), p.variable.value().data<float>()) << p.name;
    const Tensor g = store.grads().slice(0, p.offset, p.offset + p.variable.value().numel());
    double norm = 0;
    for (int64_t j = 0; j < g.numel(); ++j) norm += std::abs(g.data<float>()[j]);
    EXPECT_GT(norm, 0.0) << p.name;
  }
  autograd::clear_tape();
}

// Every attention sub-layer of a Transformer carries PyTorch's four projections under the
// names earlier releases wrote to model files (their order in the file changed with the
// stacked q/k/v registration; loading matches by name).
TEST(TransformerMultiHead, TransformerParameterNamesAreUnchanged) {
  const ModelConfig config = testing::tiny_transformer();
  const auto model = make_model(config, 3);
  std::vector<std::string> attention_names;
  for (const nn::Parameter& p : model->parameters().parameters())
    if (p.name.find("_attn.") != std::string::npos) attention_names.push_back(p.name);
  std::vector<std::string> expected;
  auto add = [&](const std::string& prefix) {
    for (const std::string& n : kProjectionNames) expected.push_back(prefix + "." + n);
  };
  for (int64_t l = 0; l < config.enc_depth; ++l)
    add("encoder.layers." + std::to_string(l) + ".self_attn");
  for (int64_t l = 0; l < config.dec_depth; ++l) {
    add("decoder.layers." + std::to_string(l) + ".self_attn");
    add("decoder.layers." + std::to_string(l) + ".cross_attn");
  }
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(attention_names, expected);
}

// What the Transformer ran before it used attention::MultiHeadAttention, op for op:
// nn::Linear projections, [B, T, H, Dh] -> [B, H, T, Dh], heads folded into the batch for
// attend(), merged, W_o. Model files of earlier releases translate identically only while
// the one multi-head attention computes bitwise this.
struct LinearBlock {
  nn::Linear q, k, v, out;
  int64_t heads;

  Variable split(const nn::Linear& proj, const Variable& x) const {
    const Shape& s = x.value().shape();
    const int64_t dh = s[2] / heads;
    const Variable y = autograd::reshape(proj.forward(x), {s[0], s[1], heads, dh});
    return autograd::reshape(autograd::transpose(y, 1, 2), {s[0], heads, s[1], dh});
  }

  attention::AttentionOutput attend(const Variable& xq, const Variable& xkv,
                                    const attention::MaskSpec& mask) const {
    const Variable qh = split(q, xq), kh = split(k, xkv), vh = split(v, xkv);
    const Shape &sq = qh.value().shape(), &sk = kh.value().shape();
    attention::MaskSpec per_head{.causal = mask.causal};
    for (const int64_t len : mask.key_lengths)
      per_head.key_lengths.insert(per_head.key_lengths.end(), size_t(heads), len);
    const attention::AttentionOutput a = attention::attend(
        autograd::reshape(qh, {sq[0] * heads, sq[2], sq[3]}),
        autograd::reshape(kh, {sk[0] * heads, sk[2], sk[3]}),
        autograd::reshape(vh, {sk[0] * heads, sk[2], sk[3]}), per_head, {}, {.need_weights = true});
    const Variable merged =
        autograd::transpose(autograd::reshape(a.context, {sq[0], heads, sq[2], sq[3]}), 1, 2);
    return {out.forward(autograd::reshape(merged, {sq[0], sq[2], sq[1] * sq[3]})), a.weights};
  }
};

TEST(TransformerMultiHead, QueryKeyValueWeightsAndBiasesAreOneStackedBlockOfTheArena) {
  nn::ParameterStore store(4);
  const attention::MultiHeadAttention mha = detail::make_multi_head(store, "l.attn", 6, 2);
  const attention::MultiHeadParams& p = mha.params();
  const float* wq = p.wq.value().data<float>();
  EXPECT_EQ(p.wk.value().data<float>(), wq + 36);
  EXPECT_EQ(p.wv.value().data<float>(), wq + 72);
  EXPECT_EQ(p.bk.value().data<float>(), p.bq.value().data<float>() + 6);
  EXPECT_EQ(p.bv.value().data<float>(), p.bq.value().data<float>() + 12);
}

// The stacked Q/K/V (and K/V) GEMM sums in another order than the former per-projection
// GEMMs (commit e9c93c9 asserted bitwise equality with them; that ended on purpose with
// the fused projection): equal within float32 rounding.
TEST(TransformerMultiHead, ComputesWhatTheFormerTransformerBlockComputed) {
  const int64_t e = 12, heads = 3;
  nn::ParameterStore store(9), linear_store(9);
  const attention::MultiHeadAttention mha = detail::make_multi_head(store, "l.attn", e, heads);
  auto linear = [&](const char* name) {
    return nn::Linear(linear_store, nn::child_name("l.attn", name), e, e);
  };
  const LinearBlock block{linear("q_proj"), linear("k_proj"), linear("v_proj"), linear("out_proj"),
                          heads};
  const Variable x(random_tensor({2, 5, e}, DType::F32, 2), false),
      memory(random_tensor({2, 7, e}, DType::F32, 3), false),
      newest(random_tensor({2, 1, e}, DType::F32, 4), false);
  struct Case {
    const char* name;
    Variable query, keys_of;
    attention::MaskSpec mask;
  };
  const std::vector<Case> cases = {{"causal self-attention", x, x, {.causal = true}},
                                   {"cross-attention", x, memory, {.key_lengths = {7, 3}}},
                                   {"decoder step", newest, memory, {.key_lengths = {2, 7}}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Self-attention through project_self, the others through project_key_values.
    const bool self = c.query.same_as(c.keys_of);
    const attention::QueryKeyValueHeads qkv =
        self ? mha.project_self(c.query) : attention::QueryKeyValueHeads{};
    const attention::KeyValueHeads kv =
        self ? attention::KeyValueHeads{qkv.keys, qkv.values} : mha.project_key_values(c.keys_of);
    const Variable queries = self ? qkv.queries : mha.project_queries(c.query);
    const attention::MultiHeadOutput mine =
        mha.attend_heads(queries, kv.keys, kv.values, c.mask,
                         {.need_weights = true, .head_weights = attention::HeadWeights::PerHead});
    const attention::AttentionOutput former = block.attend(c.query, c.keys_of, c.mask);
    EXPECT_TRUE(all_close(mine.output.value(), former.context.value(), 1e-6, 1e-5));
    EXPECT_TRUE(all_close(mine.weights.value().contiguous().reshape(former.weights.value().shape()),
                          former.weights.value(), 1e-6, 1e-5));
  }
  autograd::clear_tape();
}

}  // namespace
}  // namespace qkv::models
