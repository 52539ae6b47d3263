// The fused ReLU feed-forward block equals the ops it replaces,
// linear(relu(linear(x, w1, b1)), w2, b2), bit for bit in its value and every gradient:
// float and double, both GEMM backends, 1 and 2 threads, inputs that already have a
// gradient (added to) and inputs that need none (skipped).
#include <array>
#include <string>
#include <vector>

#include "qkv/autograd/functions.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/gemm.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

struct Result {
  Tensor y;
  std::vector<Tensor> grads;  // x, w1, b1, w2, b2 (undefined: no gradient)
};

// `needs`: which of x, w1, b1, w2, b2 require a gradient. x is also used before the block
// (x ⊙ c summed into the loss), so its gradient is added to, not written.
Result run(bool fused, int64_t rows, int64_t dim, int64_t hidden, DType dt,
           const std::vector<bool>& needs) {
  const Tensor values[] = {random_tensor({rows, dim}, dt, 1), random_tensor({hidden, dim}, dt, 2),
                           random_tensor({hidden}, dt, 3), random_tensor({dim, hidden}, dt, 4),
                           random_tensor({dim}, dt, 5)};
  std::vector<Variable> v;
  for (size_t i = 0; i < 5; ++i) v.emplace_back(values[i], needs[i]);
  const Variable c(random_tensor({rows, dim}, dt, 6), false);
  const Variable before = sum(mul(v[0], c));
  const Variable y = fused ? feed_forward_relu(v[0], v[1], v[2], v[3], v[4])
                           : linear(relu(linear(v[0], v[1], v[2])), v[3], v[4]);
  const Variable weights(random_tensor(y.value().shape(), dt, 7), false);
  backward(add(before, sum(mul(y, weights))));
  Result r{y.value(), {}};
  for (const Variable& x : v) r.grads.push_back(x.grad());
  return r;
}

TEST(FeedForwardRelu, FusedHasTheComposedOpsBitsInValueAndGradients) {
  const int saved_threads = num_threads();
  const std::vector<std::vector<bool>> needs = {{true, true, true, true, true},
                                                {false, true, true, true, true},
                                                {true, false, false, true, true},
                                                {true, true, true, false, false},
                                                {false, false, true, false, true}};
  for (const kernels::GemmBackend backend :
       {kernels::GemmBackend::Portable, kernels::GemmBackend::OpenBlas}) {
    kernels::set_gemm_backend(backend);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (DType dt : {DType::F32, DType::F64})
        for (const auto& [rows, dim, hidden] :
             {std::array<int64_t, 3>{3, 5, 7}, std::array<int64_t, 3>{300, 64, 256}})
          for (const std::vector<bool>& n : needs) {
            SCOPED_TRACE(kernels::gemm_backend_description() + " threads " +
                         std::to_string(threads) + " rows " + std::to_string(rows) + " " +
                         (dt == DType::F32 ? "f32" : "f64") + " needs " + std::to_string(n[0]) +
                         std::to_string(n[1]) + std::to_string(n[2]) + std::to_string(n[3]) +
                         std::to_string(n[4]));
            const Result fused = run(true, rows, dim, hidden, dt, n);
            const Result composed = run(false, rows, dim, hidden, dt, n);
            EXPECT_TRUE(bitwise_equal(fused.y, composed.y));
            for (size_t i = 0; i < 5; ++i) {
              ASSERT_EQ(fused.grads[i].defined(), bool(n[i])) << "input " << i;
              if (n[i]) {
                EXPECT_TRUE(bitwise_equal(fused.grads[i], composed.grads[i])) << i;
              }
            }
          }
    }
  }
  set_num_threads(saved_threads);
  kernels::set_gemm_backend(kernels::GemmBackend::Auto);
}

TEST(FeedForwardRelu, WithoutABackwardItIsTheComposition) {
  const Variable x(random_tensor({4, 3}, DType::F32, 1), true),
      w1(random_tensor({6, 3}, DType::F32, 2), true), b1(random_tensor({6}, DType::F32, 3), true),
      w2(random_tensor({3, 6}, DType::F32, 4), true), b2(random_tensor({3}, DType::F32, 5), true);
  const Tensor want = linear(relu(linear(x, w1, b1)), w2, b2).value();
  NoGradGuard no_grad;
  const Variable y = feed_forward_relu(x, w1, b1, w2, b2);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(bitwise_equal(y.value(), want));
}

TEST(FeedForwardRelu, BothLayersNeedABias) {
  const Variable x(random_tensor({4, 3}, DType::F32, 1), true),
      w1(random_tensor({6, 3}, DType::F32, 2), true),
      w2(random_tensor({3, 6}, DType::F32, 4), true), b2(random_tensor({3}, DType::F32, 5), true);
  EXPECT_TRUE(qkv::testing::throws_with<ValueError>(
      [&] { feed_forward_relu(x, w1, Variable(), w2, b2); }, {"feed_forward_relu", "no b1"}));
}

}  // namespace
}  // namespace qkv::autograd
