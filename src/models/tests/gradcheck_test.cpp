// Gradient checks in float64 of forward_train's loss with respect to every parameter of
// tiny models (the analytic gradient comes from the whole model's backward).
#include "qkv/autograd/gradcheck.h"

#include <gtest/gtest.h>

#include "model_test_util.h"
#include "qkv/autograd/functions.h"

namespace qkv::models {
namespace {

using namespace qkv::models::testing;  // NOLINT
using autograd::Variable;

Variable loss_of(Seq2Seq& model, const Batch& b) {
  const Variable logits = model.forward_train(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths);
  return autograd::cross_entropy(logits, b.tgt_out, {.ignore_index = 0});
}

// autograd::gradcheck differentiates a function of its own copies of the inputs, while a
// model reads its parameters from its store. So the input is the whole parameter arena
// θ, and f copies it into the store before evaluating the loss L. In gradcheck's one
// recorded call f also runs the model's backward (into the store's gradient arena, G =
// dL/dθ) and returns the surrogate ⟨θ, G⟩ + (L − ⟨θ, G⟩): equal to L, with gradient G
// with respect to the input. gradcheck then compares the model's G against central
// differences of L, element by element.
autograd::GradcheckReport check_model(Seq2Seq& model, const Batch& batch) {
  nn::ParameterStore& store = model.parameters();
  const autograd::ScalarFunction f = [&](const std::vector<Variable>& in) {
    copy_into(in[0].value(), store.values());
    if (!autograd::grad_mode_enabled()) return loss_of(model, batch);
    store.zero_grad();
    const Variable loss = loss_of(model, batch);
    const double l = loss.value().data<double>()[0];
    autograd::backward(loss);
    const Variable dot = autograd::sum(autograd::mul(in[0], Variable(store.grads().clone())));
    const double offset = l - dot.value().data<double>()[0];
    return autograd::add(dot, Variable(Tensor::full(dot.value().shape(), offset, DType::F64)));
  };
  return autograd::gradcheck(f, {store.values().clone()});
}

struct GradcheckCase {
  std::string name;
  ModelConfig config;
};
void PrintTo(const GradcheckCase& c, std::ostream* os) {
  *os << c.name;
}

class ModelGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(ModelGradcheck, LossGradientMatchesCentralDifferences) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 3, DType::F64);
  model->set_training(false);
  const Batch batch = make_batch({{4, 5, 6, 3}, {6, 3}}, {{5, 4}, {6}});
  const autograd::GradcheckReport r = check_model(*model, batch);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.elements_checked, model->parameters().numel());
}

ModelConfig shrink(ModelConfig c) {
  c.vocab_size = 7;
  c.dim_emb = 4;
  c.dim_rnn = 3;
  c.enc_depth = 1;
  c.dec_depth = 1;
  c.dim_ffn = 6;
  return c;
}

std::vector<GradcheckCase> gradcheck_cases() {
  ModelConfig deep = shrink(tiny_rnn(AttentionKind::General, CellType::Gru, true));
  deep.dec_depth = 2;
  return {{"rnn_additive_lstm", shrink(tiny_rnn(AttentionKind::Additive, CellType::Lstm))},
          {"rnn_additive_gru", shrink(tiny_rnn(AttentionKind::Additive, CellType::Gru))},
          {"rnn_general_gru_input_feeding_2_layers", deep},
          {"rnn_none_lstm", shrink(tiny_rnn(AttentionKind::None, CellType::Lstm))},
          {"transformer", shrink(tiny_transformer())}};
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGradcheck, ::testing::ValuesIn(gradcheck_cases()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace qkv::models
