// Float64 gradient checks of whole recurrent stacks: 2 layers, bidirectional, over a
// padded batch (one sequence of length 1), differentiating the outputs and every final
// state with respect to the input, all weights and the initial states.
#include "qkv/autograd/functions.h"
#include "qkv/autograd/gradcheck.h"
#include "qkv/nn/recurrent.h"
#include "qkv/testing/tensors.h"

namespace qkv::nn {
namespace {

using autograd::Variable;
using qkv::testing::random_tensor;
using Vars = std::vector<Variable>;

Variable weighted_sum(const Variable& y, uint64_t seed) {
  const Variable w(random_tensor(y.value().shape(), DType::F64, seed));
  return autograd::sum(autograd::mul(y, w));
}

struct Stack {
  CellKind cell;
  RecurrentOptions options;
  int64_t batch, steps;
  std::vector<int64_t> lengths;
};

// Shapes of the gradcheck inputs: x, then (w_ih, w_hh, b_ih, b_hh) per cell, then the
// initial h (and c) per cell.
std::vector<Shape> input_shapes(const Stack& s) {
  const RecurrentOptions& o = s.options;
  const int64_t dirs = o.bidirectional ? 2 : 1, gh = gates_per_unit(s.cell) * o.hidden_size;
  std::vector<Shape> shapes{{s.batch, s.steps, o.input_size}};
  for (int64_t k = 0; k < o.layers * dirs; ++k) {
    const int64_t in = k < dirs ? o.input_size : dirs * o.hidden_size;
    shapes.insert(shapes.end(), {{gh, in}, {gh, o.hidden_size}, {gh}, {gh}});
  }
  const int64_t states = (s.cell == CellKind::Lstm ? 2 : 1) * o.layers * dirs;
  for (int64_t k = 0; k < states; ++k) shapes.push_back({s.batch, o.hidden_size});
  return shapes;
}

Variable stack_loss(const Stack& s, const Vars& v) {
  const int64_t cells = s.options.layers * (s.options.bidirectional ? 2 : 1);
  RecurrentWeights w{s.cell, {}};
  for (int64_t k = 0; k < cells; ++k) {
    const auto i = size_t(1 + 4 * k);
    w.cells.push_back({v[i], v[i + 1], v[i + 2], v[i + 3]});
  }
  RecurrentState init;
  const auto first_state = size_t(1 + 4 * cells);
  for (int64_t k = 0; k < cells; ++k) {
    init.h.push_back(v[first_state + size_t(k)]);
    if (s.cell == CellKind::Lstm) init.c.push_back(v[first_state + size_t(cells + k)]);
  }
  const RecurrentOutput out = run_recurrent(w, s.options, v[0], s.lengths, init);
  Variable loss = weighted_sum(out.outputs, 1);
  for (size_t k = 0; k < out.final_state.h.size(); ++k)
    loss = autograd::add(loss, weighted_sum(out.final_state.h[k], 10 + k));
  for (size_t k = 0; k < out.final_state.c.size(); ++k)
    loss = autograd::add(loss, weighted_sum(out.final_state.c[k], 20 + k));
  return loss;
}

void expect_gradcheck_passes(const Stack& s) {
  std::vector<Tensor> inputs;
  uint64_t seed = 100;
  for (const Shape& shape : input_shapes(s))
    inputs.push_back(random_tensor(shape, DType::F64, ++seed, 0.7));
  const autograd::GradcheckReport r =
      autograd::gradcheck([&](const Vars& v) { return stack_loss(s, v); }, inputs);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_GT(r.elements_checked, 200);
}

TEST(RecurrentGradcheck, BidirectionalTwoLayerGruOverAPaddedBatch) {
  expect_gradcheck_passes({CellKind::Gru,
                           {.input_size = 2, .hidden_size = 2, .layers = 2, .bidirectional = true},
                           3,
                           4,
                           {4, 1, 3}});
}

TEST(RecurrentGradcheck, BidirectionalTwoLayerLstmOverAPaddedBatch) {
  expect_gradcheck_passes({CellKind::Lstm,
                           {.input_size = 2, .hidden_size = 2, .layers = 2, .bidirectional = true},
                           3,
                           4,
                           {4, 1, 3}});
}

TEST(RecurrentGradcheck, BidirectionalGruWithFewPaddedRows) {
  // One padded row in 11 at the last step (the whole batch steps, padded rows masked) and
  // 97 % real positions (the input products over every position): the other paths.
  expect_gradcheck_passes({CellKind::Gru,
                           {.input_size = 3, .hidden_size = 2, .layers = 1, .bidirectional = true},
                           11,
                           3,
                           {3, 3, 3, 3, 3, 2, 3, 3, 3, 3, 3}});
}

TEST(RecurrentGradcheck, LstmWithFewPaddedRows) {
  expect_gradcheck_passes({CellKind::Lstm,
                           {.input_size = 3, .hidden_size = 3, .layers = 1},
                           11,
                           3,
                           {3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 3}});
}

}  // namespace
}  // namespace qkv::nn
