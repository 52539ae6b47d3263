// GRU / LSTM: the fused cells equal the cells composed from elementary autograd
// functions (forward and backward), a one-layer run equals a float64 loop written from
// the equations, a padded batch equals each sequence run alone, and the decoder step API
// equals the sequence run.
#include "qkv/nn/recurrent.h"

#include <cmath>

#include "qkv/autograd/functions.h"
#include "qkv/testing/tensors.h"

namespace qkv::nn {
namespace {

using autograd::Variable;
using qkv::testing::all_close;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;
using qkv::testing::throws_with;

// Block k of G gate blocks: g [B, G·H] -> [B, H].
Variable block(const Variable& g, int64_t blocks, int64_t k) {
  const Shape& s = g.value().shape();
  return autograd::select(autograd::reshape(g, {s[0], blocks, s[1] / blocks}), 1, k);
}

// PyTorch's GRU cell written with sigmoid, tanh, add, sub and mul.
Variable composed_gru(const Variable& gx, const Variable& gh, const Variable& h) {
  using namespace autograd;
  const Variable r = sigmoid(add(block(gx, 3, 0), block(gh, 3, 0)));
  const Variable z = sigmoid(add(block(gx, 3, 1), block(gh, 3, 1)));
  const Variable n = tanh(add(block(gx, 3, 2), mul(r, block(gh, 3, 2))));
  const Variable one(Tensor::full(h.value().shape(), 1.0, h.value().dtype()));
  return add(mul(sub(one, z), n), mul(z, h));
}

autograd::LstmCellOutput composed_lstm(const Variable& gx, const Variable& gh, const Variable& c) {
  using namespace autograd;
  auto pre = [&](int64_t k) { return add(block(gx, 4, k), block(gh, 4, k)); };
  const Variable i = sigmoid(pre(0)), f = sigmoid(pre(1)), g = tanh(pre(2)), o = sigmoid(pre(3));
  const Variable c_new = add(mul(f, c), mul(i, g));
  return {mul(o, tanh(c_new)), c_new};
}

Variable weighted_sum(const Variable& y, uint64_t seed) {
  return autograd::sum(
      autograd::mul(y, Variable(random_tensor(y.value().shape(), DType::F64, seed))));
}

struct CellGrads {
  Tensor out, out2, dgx, dgh, dstate;
};

template <class Cell>
CellGrads run_cell(const Cell& cell, int64_t gates) {
  const Variable gx(random_tensor({3, gates * 5}, DType::F64, 1), true);
  const Variable gh(random_tensor({3, gates * 5}, DType::F64, 2), true);
  const Variable state(random_tensor({3, 5}, DType::F64, 3), true);
  const auto [out, out2] = cell(gx, gh, state);
  Variable loss = weighted_sum(out, 4);
  if (out2.defined()) loss = autograd::add(loss, weighted_sum(out2, 5));
  autograd::backward(loss);
  return {out.value(), out2.defined() ? out2.value() : Tensor(), gx.grad(), gh.grad(),
          state.grad()};
}

void expect_same(const CellGrads& a, const CellGrads& b) {
  EXPECT_TRUE(all_close(a.out, b.out, 1e-14, 1e-13));
  if (a.out2.defined()) {
    EXPECT_TRUE(all_close(a.out2, b.out2, 1e-14, 1e-13));
  }
  EXPECT_TRUE(all_close(a.dgx, b.dgx, 1e-14, 1e-13));
  EXPECT_TRUE(all_close(a.dgh, b.dgh, 1e-14, 1e-13));
  EXPECT_TRUE(all_close(a.dstate, b.dstate, 1e-14, 1e-13));
}

TEST(RecurrentCells, FusedGruEqualsComposedForwardAndBackward) {
  using Pair = std::pair<Variable, Variable>;
  const CellGrads fused = run_cell(
      [](const Variable& x, const Variable& u, const Variable& h) {
        return Pair{autograd::gru_cell(x, u, h), Variable()};
      },
      3);
  const CellGrads composed = run_cell(
      [](const Variable& x, const Variable& u, const Variable& h) {
        return Pair{composed_gru(x, u, h), Variable()};
      },
      3);
  expect_same(fused, composed);
}

TEST(RecurrentCells, FusedLstmEqualsComposedForwardAndBackward) {
  using Pair = std::pair<Variable, Variable>;
  const CellGrads fused = run_cell(
      [](const Variable& x, const Variable& u, const Variable& c) {
        const autograd::LstmCellOutput o = autograd::lstm_cell(x, u, c);
        return Pair{o.h, o.c};
      },
      4);
  const CellGrads composed = run_cell(
      [](const Variable& x, const Variable& u, const Variable& c) {
        const autograd::LstmCellOutput o = composed_lstm(x, u, c);
        return Pair{o.h, o.c};
      },
      4);
  expect_same(fused, composed);
}

double sigmoid(double v) {
  return 1 / (1 + std::exp(-v));
}

// One layer, one direction, one sequence x [T, in], in plain float64 loops straight from
// PyTorch's documented equations -> outputs [T, H].
std::vector<double> sequence_reference(CellKind cell, const CellWeights& w, const Tensor& x) {
  const int64_t steps = x.dim(0), in = x.dim(1), H = w.w_hh.value().dim(1);
  const int64_t G = gates_per_unit(cell);
  const double *wi = w.w_ih.value().data<double>(), *wh = w.w_hh.value().data<double>();
  const double *bi = w.b_ih.value().data<double>(), *bh = w.b_hh.value().data<double>();
  std::vector<double> h(size_t(H), 0.0), c(size_t(H), 0.0), out;
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<double> a(size_t(G * H)), u(size_t(G * H));
    for (int64_t g = 0; g < G * H; ++g) {
      a[size_t(g)] = bi[g];
      u[size_t(g)] = bh[g];
      for (int64_t i = 0; i < in; ++i) a[size_t(g)] += wi[g * in + i] * x.at<double>({t, i});
      for (int64_t j = 0; j < H; ++j) u[size_t(g)] += wh[g * H + j] * h[size_t(j)];
    }
    for (size_t j = 0; j < size_t(H); ++j) {
      const size_t h1 = size_t(H);
      if (cell == CellKind::Gru) {
        const double r = sigmoid(a[j] + u[j]), z = sigmoid(a[h1 + j] + u[h1 + j]);
        const double n = std::tanh(a[2 * h1 + j] + r * u[2 * h1 + j]);
        h[j] = (1 - z) * n + z * h[j];
      } else {
        const double i = sigmoid(a[j] + u[j]), f = sigmoid(a[h1 + j] + u[h1 + j]);
        const double g = std::tanh(a[2 * h1 + j] + u[2 * h1 + j]);
        const double o = sigmoid(a[3 * h1 + j] + u[3 * h1 + j]);
        c[j] = f * c[j] + i * g;
        h[j] = o * std::tanh(c[j]);
      }
    }
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

TEST(Recurrent, OneLayerMatchesAFloat64LoopFromTheEquations) {
  for (CellKind cell : {CellKind::Gru, CellKind::Lstm}) {
    SCOPED_TRACE(cell == CellKind::Gru ? "GRU" : "LSTM");
    ParameterStore store(1, DType::F64);
    Recurrent rnn(store, "rnn", cell, {.input_size = 3, .hidden_size = 4});
    for (const Parameter& p : store.parameters())  // non-zero biases too
      copy_into(random_tensor(p.variable.value().shape(), DType::F64, 9, 0.5), p.variable.value());
    const Variable x(random_tensor({2, 5, 3}, DType::F64, 2));
    const std::vector<int64_t> lengths{5, 5};
    const RecurrentOutput out = rnn.forward(x, lengths);
    EXPECT_EQ(out.outputs.value().shape(), (Shape{2, 5, 4}));
    for (int64_t b = 0; b < 2; ++b) {
      const std::vector<double> want = sequence_reference(
          cell, rnn.weights().cells[0], autograd::select(x, 0, b).value().contiguous());
      EXPECT_TRUE(all_close(autograd::select(out.outputs, 0, b).value(),
                            Tensor::from(Shape{5, 4}, want), 1e-13, 0));
    }
  }
}

// x [B, T, in] row b cut to its length -> [1, len, in].
Variable alone(const Variable& x, int64_t b, int64_t len) {
  return Variable(x.value().slice(0, b, b + 1).slice(1, 0, len).contiguous());
}

// A padded batch of x [B, T, 3] against each sequence run alone, for both cells: a
// 2-layer bidirectional stack (hidden 4), outputs, zeros past each length and every
// final state.
void expect_padded_batch_equals_each_sequence_alone(const std::vector<int64_t>& lengths,
                                                    int64_t steps) {
  const auto batch = int64_t(lengths.size());
  for (CellKind cell : {CellKind::Gru, CellKind::Lstm}) {
    SCOPED_TRACE(cell == CellKind::Gru ? "GRU" : "LSTM");
    ParameterStore store(2, DType::F64);
    Recurrent rnn(store, "enc", cell,
                  {.input_size = 3, .hidden_size = 4, .layers = 2, .bidirectional = true});
    const Variable x(random_tensor({batch, steps, 3}, DType::F64, 3));
    const RecurrentOutput full = rnn.forward(x, lengths);
    ASSERT_EQ(full.outputs.value().shape(), (Shape{batch, steps, 8}));
    ASSERT_EQ(full.final_state.h.size(), 4u);
    EXPECT_EQ(full.final_state.c.size(), cell == CellKind::Lstm ? 4u : 0u);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lengths[size_t(b)];
      const RecurrentOutput one = rnn.forward(alone(x, b, len), std::vector<int64_t>{len});
      const Tensor row = full.outputs.value().slice(0, b, b + 1);
      EXPECT_TRUE(all_close(row.slice(1, 0, len), one.outputs.value(), 1e-14, 0)) << "b " << b;
      for (double v : row.slice(1, len, steps).contiguous().to_vector<double>()) EXPECT_EQ(v, 0.0);
      for (size_t k = 0; k < 4; ++k) {
        EXPECT_TRUE(all_close(full.final_state.h[k].value().slice(0, b, b + 1),
                              one.final_state.h[k].value(), 1e-14, 0));
        if (cell == CellKind::Lstm) {
          EXPECT_TRUE(all_close(full.final_state.c[k].value().slice(0, b, b + 1),
                                one.final_state.c[k].value(), 1e-14, 0));
        }
      }
      // The top layer's forward state stopped at the last real token, the reverse one
      // started there and ended at the first.
      EXPECT_TRUE(bitwise_equal(full.final_state.h[2].value().slice(0, b, b + 1).reshape({4}),
                                row.slice(1, len - 1, len).slice(2, 0, 4).reshape({4})));
      EXPECT_TRUE(bitwise_equal(full.final_state.h[3].value().slice(0, b, b + 1).reshape({4}),
                                row.slice(1, 0, 1).slice(2, 4, 8).reshape({4})));
    }
  }
}

TEST(Recurrent, PaddedBatchEqualsEachSequenceAlone) {
  // A third of the rows padded at most steps: only the real rows step, and the input
  // products run on the real positions.
  expect_padded_batch_equals_each_sequence_alone({5, 2, 4}, 5);
}

TEST(Recurrent, PaddedBatchEqualsEachSequenceAloneWhateverThePaddingShare) {
  // Steps 1-2 have one padded row in 12 (under 10 %: the whole batch steps, padded rows
  // masked), steps 3-5 two or three (the real rows only); 87.5 % of the positions are
  // real (the input products run on those).
  expect_padded_batch_equals_each_sequence_alone({6, 6, 6, 6, 5, 6, 6, 3, 6, 6, 1, 6}, 6);
  // One padded position in 72: masked steps and the input products over every position.
  expect_padded_batch_equals_each_sequence_alone({6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 6, 6}, 6);
}

TEST(Recurrent, EmptySequenceKeepsTheInitialStateAndOutputsZeros) {
  ParameterStore store(3, DType::F64);
  LSTM rnn(store, "enc", {.input_size = 2, .hidden_size = 3});
  RecurrentState init = rnn.initial_state(2);
  init.h[0] = Variable(random_tensor({2, 3}, DType::F64, 4));
  init.c[0] = Variable(random_tensor({2, 3}, DType::F64, 5));
  const RecurrentOutput out = rnn.forward(Variable(random_tensor({2, 3, 2}, DType::F64, 6)),
                                          std::vector<int64_t>{0, 3}, init);
  EXPECT_TRUE(
      bitwise_equal(out.final_state.h[0].value().slice(0, 0, 1), init.h[0].value().slice(0, 0, 1)));
  EXPECT_TRUE(
      bitwise_equal(out.final_state.c[0].value().slice(0, 0, 1), init.c[0].value().slice(0, 0, 1)));
  for (double v : out.outputs.value().slice(0, 0, 1).contiguous().to_vector<double>())
    EXPECT_EQ(v, 0.0);
}

TEST(Recurrent, DecoderStepEqualsTheSequenceRun) {
  for (CellKind cell : {CellKind::Gru, CellKind::Lstm}) {
    ParameterStore store(4, DType::F64);
    Recurrent rnn(store, "dec", cell, {.input_size = 3, .hidden_size = 4, .layers = 2});
    const Variable x(random_tensor({2, 4, 3}, DType::F64, 7));
    const RecurrentOutput seq = rnn.forward(x, std::vector<int64_t>{4, 4});
    RecurrentState state;  // empty: zeros
    for (int64_t t = 0; t < 4; ++t) {
      state = rnn.step(autograd::select(x, 1, t), state);
      ASSERT_EQ(state.h.size(), 2u);
      EXPECT_TRUE(
          all_close(state.h.back().value(), autograd::select(seq.outputs, 1, t).value(), 1e-14, 0));
    }
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_TRUE(all_close(state.h[k].value(), seq.final_state.h[k].value(), 1e-14, 0));
      if (cell == CellKind::Lstm) {
        EXPECT_TRUE(all_close(state.c[k].value(), seq.final_state.c[k].value(), 1e-14, 0));
      }
    }
  }
}

TEST(Recurrent, ParametersCarryPyTorchNamesAndShapes) {
  ParameterStore store;
  const GRU gru(store, "enc.rnn",
                {.input_size = 5, .hidden_size = 4, .layers = 2, .bidirectional = true});
  EXPECT_EQ(store.get("enc.rnn.weight_ih_l0").value().shape(), (Shape{12, 5}));
  EXPECT_EQ(store.get("enc.rnn.weight_hh_l0_reverse").value().shape(), (Shape{12, 4}));
  EXPECT_EQ(store.get("enc.rnn.weight_ih_l1").value().shape(), (Shape{12, 8}));
  EXPECT_EQ(store.get("enc.rnn.bias_hh_l1_reverse").value().shape(), Shape{12});
  EXPECT_EQ(store.size(), 16u);
  const LSTM lstm(store, "dec.rnn", {.input_size = 3, .hidden_size = 2, .bias = false});
  EXPECT_EQ(store.get("dec.rnn.weight_ih_l0").value().shape(), (Shape{8, 3}));
  EXPECT_FALSE(store.contains("dec.rnn.bias_ih_l0"));
}

TEST(Recurrent, BadInputNamesWhatIsWrong) {
  ParameterStore store;
  GRU bi(store, "enc", {.input_size = 3, .hidden_size = 2, .bidirectional = true});
  const Variable x(Tensor::zeros({2, 4, 3}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        bi.forward(x, std::vector<int64_t>{4, 5});
      },
      {"lengths[1] = 5", "T = 4"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { bi.forward(x, std::vector<int64_t>{4}); },
                                      {"1 lengths", "batch of 2"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        bi.forward(Variable(Tensor::zeros({2, 4, 5})), std::vector<int64_t>{4, 4});
      },
      {"f32[2, 4, 5]", "[B, T, 3]"}));
  RecurrentState wrong;
  wrong.h.emplace_back(Tensor::zeros({2, 2}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] {
        bi.forward(x, std::vector<int64_t>{4, 4}, wrong);
      },
      {"initial h", "1 entries", "2 layers x directions"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] {
        bi.step(Variable(Tensor::zeros({2, 3})), {});
      },
      {"bidirectional"}));
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { GRU(store, "bad", {.input_size = 0, .hidden_size = 2}); },
                               {"GRU bad", "input_size 0"}));
  RecurrentWeights missing = bi.weights();
  missing.cells.pop_back();
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] {
        run_recurrent(missing, bi.options(), x, std::vector<int64_t>{4, 4});
      },
      {"1 cell weights", "expected 2"}));
}

}  // namespace
}  // namespace qkv::nn
