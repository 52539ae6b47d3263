// Each system can learn: a small model overfits a fixed batch of 8 reversal pairs (the
// loss falls by more than 90%) with a minimal Adam written here (the real optimizer
// lives in src/train).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model_test_util.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/rng.h"

namespace qkv::models {
namespace {

using namespace qkv::models::testing;  // NOLINT

// Adam (Kingma & Ba 2015, algorithm 1) over the store's flat arenas.
class MinimalAdam {
 public:
  MinimalAdam(nn::ParameterStore& store, double lr)
      : store_(store), lr_(lr), m_(size_t(store.numel())), v_(size_t(store.numel())) {}
  void step() {
    ++t_;
    float* p = store_.values().data<float>();
    const float* g = store_.grads().data<float>();
    const double c1 = 1 - std::pow(0.9, t_), c2 = 1 - std::pow(0.999, t_);
    for (size_t i = 0; i < m_.size(); ++i) {
      m_[i] = 0.9 * m_[i] + 0.1 * g[i];
      v_[i] = 0.999 * v_[i] + 0.001 * double(g[i]) * g[i];
      p[i] -= float(lr_ * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + 1e-8));
    }
  }

 private:
  nn::ParameterStore& store_;
  double lr_;
  std::vector<double> m_, v_;
  int t_ = 0;
};

// 8 sentences of 3-6 word ids (4..10) ending in EOS; the target is the words reversed.
Batch reversal_batch() {
  Rng rng(17);
  std::vector<std::vector<int64_t>> src, tgt;
  for (int i = 0; i < 8; ++i) {
    const int64_t n = 3 + int64_t(rng.uniform_int(4));
    std::vector<int64_t> words;
    for (int64_t j = 0; j < n; ++j) words.push_back(4 + int64_t(rng.uniform_int(7)));
    tgt.emplace_back(words.rbegin(), words.rend());
    words.push_back(3);
    src.push_back(words);
  }
  return make_batch(src, tgt);
}

double train(Seq2Seq& model, const Batch& batch, int steps, double lr, double* first) {
  MinimalAdam adam(model.parameters(), lr);
  double loss = 0;
  for (int s = 0; s < steps; ++s) {
    model.parameters().zero_grad();
    const autograd::Variable logits =
        model.forward_train(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_lengths);
    const autograd::Variable l =
        autograd::cross_entropy(logits, batch.tgt_out, {.ignore_index = 0});
    loss = double(l.value().data<float>()[0]);
    if (s == 0) *first = loss;
    autograd::backward(l);
    adam.step();
  }
  return loss;
}

struct LearningCase {
  std::string name;
  ModelConfig config;
  double lr;
};
void PrintTo(const LearningCase& c, std::ostream* os) {
  *os << c.name;
}

class Learns : public ::testing::TestWithParam<LearningCase> {};

TEST_P(Learns, OverfitsAFixedBatch) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 1);
  model->set_training(false);  // dropout 0 anyway; the point is the fit
  double first = 0;
  const double last = train(*model, reversal_batch(), 150, GetParam().lr, &first);
  EXPECT_GT(first, 1.5);  // about log(11) at the start
  EXPECT_LT(last, 0.1 * first) << "first " << first << ", last " << last;
}

ModelConfig learning_rnn(AttentionKind a, CellType cell, bool input_feeding = false) {
  ModelConfig c = tiny_rnn(a, cell, input_feeding);
  c.dim_emb = 16;
  c.dim_rnn = 24;
  c.enc_depth = 1;
  c.dec_depth = 1;
  return c;
}

std::vector<LearningCase> learning_cases() {
  ModelConfig t = tiny_transformer();
  t.dim_emb = 16;
  t.dim_ffn = 32;
  return {{"rnn_none_gru", learning_rnn(AttentionKind::None, CellType::Gru), 0.02},
          {"rnn_general_lstm_input_feeding",
           learning_rnn(AttentionKind::General, CellType::Lstm, true), 0.02},
          {"rnn_additive_gru", learning_rnn(AttentionKind::Additive, CellType::Gru), 0.02},
          {"transformer", t, 0.01}};
}

INSTANTIATE_TEST_SUITE_P(Models, Learns, ::testing::ValuesIn(learning_cases()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace qkv::models
