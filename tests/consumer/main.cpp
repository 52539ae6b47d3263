// A user's first program against the installed package: a linear layer trained for a
// few steps must lower the loss.
#include <cmath>
#include <cstdio>
#include <vector>

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
  std::printf("loss ok\n");
  return 0;
}
