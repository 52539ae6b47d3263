// Variable::bind_storage: a variable living in caller-owned value and gradient buffers
// (how qkv::nn keeps all parameters in one flat arena) accumulates in place.
#include "qkv/autograd/functions.h"
#include "qkv/ops/elementwise.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;
using qkv::testing::throws_with;

TEST(BindStorage, GradientsAccumulateInPlaceIntoTheBoundBuffer) {
  const Tensor arena = Tensor::zeros({10}, DType::F64), grads = Tensor::zeros({10}, DType::F64);
  const Variable w(Tensor::full({2, 3}, 2.0, DType::F64), true);
  Tensor value = arena.slice(0, 4, 10).reshape({2, 3});
  copy_into(w.value(), value);
  w.bind_storage(value, grads.slice(0, 4, 10).reshape({2, 3}));
  EXPECT_TRUE(w.has_bound_grad());
  EXPECT_EQ(w.value().data<double>(), arena.data<double>() + 4);
  ASSERT_TRUE(w.grad().defined());  // bound storage is always defined (zeros here)
  const Variable x(random_tensor({2, 3}, DType::F64, 1));
  for (int pass = 0; pass < 2; ++pass) backward(sum(mul(w, x)));
  // d/dw Σ w ⊙ x = x, twice.
  EXPECT_TRUE(bitwise_equal(w.grad(), ops::scale(x.value(), 2.0)));
  EXPECT_EQ(grads.data<double>()[4], 2 * x.value().data<double>()[0]);
  EXPECT_EQ(grads.data<double>()[3], 0.0);  // outside the slice: untouched
  w.zero_grad();
  EXPECT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().data<double>(), grads.data<double>() + 4);
  for (double g : grads.to_vector<double>()) EXPECT_EQ(g, 0.0);
}

TEST(BindStorage, SelectAddsIntoTheBoundSlice) {
  const Tensor grads = Tensor::zeros({6}, DType::F32);
  const Variable w(random_tensor({3, 2}, DType::F32, 2), true);
  w.bind_storage(w.value().clone(), grads.reshape({3, 2}));
  backward(add(sum(select(w, 0, 1)), sum(select(w, 0, 1))));
  EXPECT_EQ(grads.to_vector<float>(), (std::vector<float>{0, 0, 2, 2, 0, 0}));
}

TEST(BindStorage, RejectsStorageThatDoesNotFit) {
  const Variable w(Tensor::zeros({2, 3}, DType::F32), true);
  const Tensor ok = Tensor::zeros({2, 3}, DType::F32);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        w.bind_storage(Tensor::zeros({3, 2}), ok);
      },
      {"f32[3, 2]", "f32[2, 3]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        w.bind_storage(ok, Tensor::zeros({2, 3}, DType::F64));
      },
      {"f64[2, 3]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        w.bind_storage(ok, Tensor::zeros({3, 2}).transpose(0, 1));
      },
      {"contiguous"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { w.bind_storage(ok, Tensor()); }, {"undefined"}));
  EXPECT_FALSE(w.has_bound_grad());
}

TEST(BindStorage, UnboundVariablesKeepTheirBehaviour) {
  const Variable w(Tensor::full({2}, 1.0, DType::F64), true);
  EXPECT_FALSE(w.grad().defined());
  backward(sum(w));
  EXPECT_TRUE(w.grad().defined());
  w.zero_grad();
  EXPECT_FALSE(w.grad().defined());  // dropped, as before
}

// A parameter-like variable: its gradient lives in a buffer of its own (bound storage).
Variable bound_variable(const Shape& shape, uint64_t seed) {
  const Variable v(random_tensor(shape, DType::F64, seed), true);
  v.bind_storage(v.value().clone(), Tensor::zeros(shape, DType::F64));
  return v;
}

TEST(BackwardReady, ReportsEachBoundGradientOnceWhenCompleteAndBeforeEarlierOps) {
  // y = sum(tanh(a·x) · b) + sum(c ⊙ c'): a is used first (so complete last), b later, c
  // twice in the last op, u never used; x is a constant and w an unbound leaf.
  const Variable a = bound_variable({3, 4}, 1), b = bound_variable({2, 4}, 2),
                 c = bound_variable({2, 4}, 3), u = bound_variable({2}, 4);
  const Variable x(random_tensor({2, 3}, DType::F64, 5));
  const Variable w(random_tensor({2, 4}, DType::F64, 6), true);
  const auto loss = [&] {  // one statement per op: the recording order is the test's
    const Variable first = sum(mul(mul(tanh(matmul(x, a)), b), w));
    const Variable second = sum(mul(c, c));
    return add(first, second);
  };
  std::vector<std::string> order;
  std::vector<Tensor> at_report;
  backward(loss(), [&](const Variable& v) {
    order.push_back(v.same_as(a) ? "a" : v.same_as(b) ? "b" : v.same_as(c) ? "c" : "?");
    at_report.push_back(v.grad().clone());  // what the gradient was when reported
  });
  ASSERT_EQ(order, (std::vector<std::string>{"c", "b", "a"}));
  // Complete when reported: equal to the gradients of a plain backward.
  const std::vector<Variable> vars = {c, b, a};
  std::vector<Tensor> reported_final;
  for (const Variable& v : vars) reported_final.push_back(v.grad().clone());
  for (const Variable& v : vars) v.zero_grad();
  w.zero_grad();
  backward(loss());
  for (size_t i = 0; i < vars.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(at_report[i], vars[i].grad())) << order[i];
    EXPECT_TRUE(bitwise_equal(reported_final[i], vars[i].grad())) << order[i];
  }
}

TEST(BackwardReady, IsCalledBeforeTheRestOfTheTapeRuns) {
  // b is complete after the last op; a only after the first: when b is reported, a's
  // gradient must still be zero (the reverse pass has not reached a's op yet).
  const Variable a = bound_variable({4}, 7), b = bound_variable({4}, 8);
  const Variable h = tanh(mul(a, a));
  bool a_was_zero_when_b_reported = false;
  backward(sum(mul(h, b)), [&](const Variable& v) {
    if (!v.same_as(b)) return;
    a_was_zero_when_b_reported = true;
    for (double g : a.grad().to_vector<double>()) a_was_zero_when_b_reported &= g == 0.0;
  });
  EXPECT_TRUE(a_was_zero_when_b_reported);
  for (double g : a.grad().to_vector<double>()) EXPECT_NE(g, 0.0);
}

}  // namespace
}  // namespace qkv::autograd
