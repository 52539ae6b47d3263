// A composite forward/backward (matmul -> layer_norm -> log_softmax -> cross_entropy) is
// bitwise identical for 1 and 2 threads, at sizes where the kernels run in parallel.
#include "qkv/autograd/functions.h"
#include "qkv/base/thread_pool.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::bitwise_equal;
using qkv::testing::random_ids;
using qkv::testing::random_tensor;

struct CompositeResult {
  Tensor loss;
  std::vector<Tensor> grads;
};

CompositeResult run_composite(int threads) {
  set_num_threads(threads);
  constexpr int64_t kRows = 256, kIn = 512, kOut = 512;
  const Variable x(random_tensor({kRows, kIn}, DType::F32, 1), true);
  const Variable w(random_tensor({kIn, kOut}, DType::F32, 2, 0.05), true);
  const Variable gamma(random_tensor({kOut}, DType::F32, 3), true);
  const Variable beta(random_tensor({kOut}, DType::F32, 4), true);
  Tensor targets = random_ids({kRows}, DType::F32, 5, kOut);
  targets.data<float>()[7] = -1;  // one ignored (padding) row
  const Variable h = layer_norm(matmul(x, w), gamma, beta);
  const Variable logp = log_softmax(dropout(h, {0.1, 7, 0, 0}));
  const Variable loss = cross_entropy(logp, targets, {0.1, -1});
  backward(loss);
  return {loss.value(), {x.grad(), w.grad(), gamma.grad(), beta.grad()}};
}

TEST(Determinism, CompositeIsBitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  const CompositeResult one = run_composite(1);
  const CompositeResult two = run_composite(2);
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(one.loss, two.loss));
  ASSERT_EQ(one.grads.size(), two.grads.size());
  for (size_t i = 0; i < one.grads.size(); ++i) {
    ASSERT_TRUE(one.grads[i].defined());
    EXPECT_TRUE(bitwise_equal(one.grads[i], two.grads[i])) << "gradient " << i;
  }
  EXPECT_TRUE(std::isfinite(*one.loss.data<float>()));
}

}  // namespace
}  // namespace qkv::autograd
