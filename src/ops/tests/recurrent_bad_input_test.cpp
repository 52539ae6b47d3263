// Bad input to the recurrent-cell and sequence ops raises a typed qkv::Error naming the
// shapes or values at fault (bad_input_test.cpp does the same for the other ops).
#include <cmath>
#include <limits>

#include "qkv/ops/recurrent.h"
#include "qkv/ops/sequence.h"
#include "qkv/testing/tensors.h"

namespace qkv::testing {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const Shape& s) {
  return random_tensor(s, DType::F64, 7);
}
Tensor f32(const Shape& s) {
  return random_tensor(s, DType::F32, 7);
}
std::vector<TensorView> views(std::initializer_list<Tensor> ts) {
  static std::vector<Tensor> keep;  // the views below must outlive the call
  keep.assign(ts.begin(), ts.end());
  return {keep.begin(), keep.end()};
}

TEST(BadInput, GruCell) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::gru_cell(f64({2, 8}), f64({2, 9}), f64({2, 3}));
      },
      {"gru_cell", "gx f64[2, 8]", "[2, 9]", "h f64[2, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::gru_cell(f64({2, 9}), f64({3, 9}), f64({2, 3}));
      },
      {"gh f64[3, 9]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::gru_cell(f64({6}), f64({6}), f64({2})); },
                                      {"h f64[2]", "[B, H]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        ops::gru_cell(f64({2, 9}), f32({2, 9}), f64({2, 3}));
      },
      {"mixed dtypes"}));
  const ops::GruCellResult r = ops::gru_cell(f64({2, 9}), f64({2, 9}), f64({2, 3}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::gru_cell_backward(f64({2, 4}), f64({2, 9}), f64({2, 3}), r.gates);
      },
      {"gru_cell_backward", "dh_new f64[2, 4]"}));
  EXPECT_TRUE(
      throws_with<ValueError>([] { ops::gru_cell(Tensor(), Tensor(), Tensor()); }, {"undefined"}));
}

TEST(BadInput, LstmCell) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::lstm_cell(f64({2, 9}), f64({2, 9}), f64({2, 3}));
      },
      {"lstm_cell", "gx f64[2, 9]", "[2, 12]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        ops::lstm_cell(f32({2, 12}), f32({2, 12}), f64({2, 3}));
      },
      {"mixed dtypes"}));
  const ops::LstmCellResult r = ops::lstm_cell(f64({2, 12}), f64({2, 12}), f64({2, 3}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::lstm_cell_backward(f64({2, 3}), f64({3, 3}), f64({2, 3}), r.c, r.gates);
      },
      {"dc_new f64[3, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::lstm_cell_backward(f64({2, 3}), f64({2, 3}), f64({2, 3}), r.c, f64({2, 9}));
      },
      {"f64[2, 9]"}));
}

TEST(BadInput, MaskedBlend) {
  const Tensor mask = Tensor::from(Shape{2}, std::vector<double>{1, 0});
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::masked_blend(f64({2, 3}), f64({2, 4}), mask);
      },
      {"f64[2, 3]", "f64[2, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::masked_blend(f64({2, 3}), f64({2, 3}), f64({3}));
      },
      {"mask f64[3]", "without its last dim"}));
  for (double bad : {0.5, -1.0, kNaN})
    EXPECT_TRUE(throws_with<ValueError>(
        [bad] {
          ops::masked_blend(f64({2, 3}), f64({2, 3}),
                            Tensor::from(Shape{2}, std::vector<double>{1, bad}));
        },
        {"mask value", "row 1", "not 0 or 1"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::masked_blend(f64({2, 3}), f32({2, 3}), mask);
      },
      {"mixed dtypes"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { ops::masked_blend_backward(f64({}), mask); },
                                      {"masked_blend_backward", "rank"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::masked_blend(f64({2, 3}), f64({2, 3}), Tensor());
      },
      {"undefined"}));
}

TEST(BadInput, ConcatAndStack) {
  EXPECT_TRUE(throws_with<ValueError>([] { ops::concat({}, 0); }, {"concat", "at least one"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::concat(views({f64({2, 3}), f64({3, 3})}), 1);
      },
      {"part 1 f64[3, 3]", "part 0 f64[2, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::concat(views({f64({2, 3})}), 2); }, {"axis 2"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::concat(views({f64({})}), 0); }, {"rank"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        ops::concat(views({f64({2, 3}), f32({2, 3})}), 0);
      },
      {"mixed dtypes"}));
  const std::vector<int64_t> sizes{2, 2};
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::concat_backward(f64({2, 5}), sizes, 1);
      },
      {"sum to 4", "f64[2, 5]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { ops::stack({}, 0); }, {"stack", "at least one"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::stack(views({f64({2, 3}), f64({2, 4})}), 0);
      },
      {"part 1 f64[2, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::stack(views({f64({2, 3})}), 3); }, {"axis 3"}));
}

TEST(BadInput, Select) {
  EXPECT_TRUE(throws_with<IndexError>(
      [] {
        ops::select(f64({2, 3}), 1, 3);
      },
      {"index 3", "[0, 3)", "f64[2, 3]"}));
  EXPECT_TRUE(throws_with<IndexError>([] { ops::select(f64({2, 3}), 0, -1); }, {"index -1"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::select(f64({2, 3}), 2, 0); }, {"axis 2"}));
  EXPECT_TRUE(throws_with<ValueError>([] { ops::select(Tensor(), 0, 0); }, {"undefined"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::select_backward(f64({3}), Shape{2, 3}, 1, 0);
      },
      {"dy f64[3]", "[2, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::accumulate_select_into(f64({2, 3}), 0, 1, f64({2}));
      },
      {"src f64[2]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        const Tensor t = f64({3, 2});
        ops::accumulate_select_into(t.transpose(0, 1), 0, 1, f64({3}));
      },
      {"not contiguous"}));
}

}  // namespace
}  // namespace qkv::testing
