// A bidirectional 2-layer GRU and LSTM with dropout between layers, forward and backward
// over a padded batch, give bitwise identical outputs and parameter gradients for 1 and
// 2 threads, at sizes where the GEMMs and the cell kernels split over the pool
// (B·G·H = 32·3·192 = 18432 > the kernels' 16384-element grain).
#include "qkv/autograd/functions.h"
#include "qkv/base/thread_pool.h"
#include "qkv/nn/recurrent.h"
#include "qkv/testing/tensors.h"

namespace qkv::nn {
namespace {

using autograd::Variable;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

struct StackRun {
  Tensor outputs, grads;
};

StackRun run_stack(CellKind cell, int threads) {
  set_num_threads(threads);
  ParameterStore store(42);
  Recurrent rnn(
      store, "enc", cell,
      {.input_size = 64, .hidden_size = 192, .layers = 2, .bidirectional = true, .dropout = 0.2});
  const Variable x(random_tensor({32, 6, 64}, DType::F32, 1));
  std::vector<int64_t> lengths(32);
  for (size_t b = 0; b < lengths.size(); ++b) lengths[b] = 1 + int64_t(b % 6);
  const RecurrentOutput out = rnn.forward(x, lengths);
  const Variable w(random_tensor(out.outputs.value().shape(), DType::F32, 2));
  autograd::backward(autograd::sum(autograd::mul(out.outputs, w)));
  return {out.outputs.value(), store.grads().clone()};
}

TEST(Determinism, RecurrentStacksAreBitwiseIdenticalForOneAndTwoThreads) {
  const int saved = num_threads();
  for (CellKind cell : {CellKind::Gru, CellKind::Lstm}) {
    SCOPED_TRACE(cell == CellKind::Gru ? "GRU" : "LSTM");
    const StackRun one = run_stack(cell, 1), two = run_stack(cell, 2);
    EXPECT_TRUE(bitwise_equal(one.outputs, two.outputs));
    EXPECT_TRUE(bitwise_equal(one.grads, two.grads));
    double norm = 0;
    for (float g : one.grads.to_vector<float>()) norm += double(g) * g;
    EXPECT_GT(norm, 0.0);
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace qkv::nn
