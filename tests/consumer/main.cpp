// A user's first program against the installed package: a linear layer trained for a
// few steps must lower the loss.
#include <cmath>
#include <cstdio>
#include <vector>

#include "qkv/attention/multi_head.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/rng.h"

int main() {
  using namespace qkv;
  Rng rng(7);
  std::vector<float> x(8 * 4), w(4 * 3), t(8);
  for (float& v : x) v = rng.normal();
  for (float& v : w) v = 0.1f * rng.normal();
  for (size_t i = 0; i < t.size(); ++i) t[i] = float(i % 3);
  const Tensor inputs = Tensor::from({8, 4}, x), targets = Tensor::from({8}, t);
  autograd::Variable weight(Tensor::from({4, 3}, w), /*requires_grad=*/true);

  float first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    weight.zero_grad();
    autograd::Variable logits = autograd::matmul(autograd::Variable(inputs), weight);
    autograd::Variable loss = autograd::cross_entropy(logits, targets, {.label_smoothing = 0.1});
    autograd::backward(loss);
    last = loss.value().data<float>()[0];
    if (step == 0) first = last;
    float* wp = weight.value().data<float>();
    const float* gp = weight.grad().data<float>();
    for (int i = 0; i < 12; ++i) wp[i] -= 0.5f * gp[i];
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  if (!(std::isfinite(last) && last < first)) return 1;

  // Attention as the README shows it: masked scaled-dot and multi-head self-attention.
  std::vector<float> xs(2 * 7 * 16);
  for (float& v : xs) v = rng.normal();
  const autograd::Variable seq(Tensor::from({2, 7, 16}, xs));
  attention::MaskSpec mask{.key_lengths = {7, 5}, .causal = true};
  attention::AttentionOutput a = attention::attend(
      seq, seq, seq, mask, {}, {.kind = attention::ScoreKind::ScaledDot, .need_weights = true});
  attention::MultiHeadAttention mha(/*embed_dim=*/16, /*heads=*/4, rng);
  attention::MultiHeadOutput m = mha.forward(seq, seq, seq, mask);
  if (a.weights.value().shape() != Shape{2, 7, 7} || m.output.value().shape() != Shape{2, 7, 16})
    return 1;
  for (float v : m.output.value().to_vector<float>())
    if (!std::isfinite(v)) return 1;
  std::printf("loss ok\n");
  return 0;
}
