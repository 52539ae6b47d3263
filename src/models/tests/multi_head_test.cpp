// The Transformer's attention layers are attention::MultiHeadAttention over parameters
// in the model's store: the same names, order and initial values nn::Linear gives them
// (what model.safetensors files hold), trained in place.
#include "detail/multi_head.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "qkv/autograd/functions.h"
#include "qkv/nn/linear.h"
#include "test_util.h"

namespace qkv::models {
namespace {

using autograd::Variable;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

const std::vector<std::string> kProjectionNames = {
    "q_proj.weight", "q_proj.bias", "k_proj.weight",   "k_proj.bias",
    "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"};

TEST(TransformerMultiHead, RegistersWhatFourLinearLayersWould) {
  nn::ParameterStore store(5), linear_store(5);
  const attention::MultiHeadAttention mha = detail::make_multi_head(store, "enc.self_attn", 12, 3);
  for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"})
    nn::Linear(linear_store, nn::child_name("enc.self_attn", name), 12, 12);
  ASSERT_EQ(store.size(), kProjectionNames.size());
  for (size_t i = 0; i < kProjectionNames.size(); ++i) {
    const nn::Parameter& p = store.parameters()[i];
    EXPECT_EQ(p.name, "enc.self_attn." + kProjectionNames[i]);
    EXPECT_EQ(p.name, linear_store.parameters()[i].name);
    EXPECT_TRUE(bitwise_equal(p.variable.value(), linear_store.parameters()[i].variable.value()))
        << p.name;
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
    const std::vector<const Variable*> mine = {&w.wq, &w.bq, &w.wk, &w.bk,
                                               &w.wv, &w.bv, &w.wo, &w.bo};
    EXPECT_EQ(mine[i]->value().data<float>(), p.variable.value().data<float>()) << p.name;
    const Tensor g = store.grads().slice(0, p.offset, p.offset + p.variable.value().numel());
    double norm = 0;
    for (int64_t j = 0; j < g.numel(); ++j) norm += std::abs(g.data<float>()[j]);
    EXPECT_GT(norm, 0.0) << p.name;
  }
  autograd::clear_tape();
}

// Every attention sub-layer of a Transformer carries PyTorch's four projections, in the
// order earlier releases wrote them to model files.
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

}  // namespace
}  // namespace qkv::models
