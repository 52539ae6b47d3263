// Variable::bind_storage: a variable living in caller-owned value and gradient buffers
// (how qkv::nn keeps all parameters in one flat arena) accumulates in place.
#include "qkv/autograd/functions.h"
#include "qkv/ops/elementwise.h"
#include "test_util.h"

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

}  // namespace
}  // namespace qkv::autograd
