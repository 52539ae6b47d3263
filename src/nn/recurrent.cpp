// The functional core of the recurrent layers: checks, then per layer and direction one
// input GEMM and a loop of fused cell steps over the padded batch.
#include "qkv/nn/recurrent.h"

#include <string_view>

#include "qkv/autograd/functions.h"

namespace qkv::nn {
namespace {

using autograd::Variable;

int64_t directions(const RecurrentOptions& o) {
  return o.bidirectional ? 2 : 1;
}

void check_shape(std::string_view what, size_t index, const Variable& v, const Shape& expected) {
  QKV_CHECK(v.defined(), ConfigError, "recurrent: ", what, "[", index, "] is undefined");
  QKV_CHECK(v.value().shape() == expected, ShapeError, "recurrent: ", what, "[", index, "] ",
            describe(v.value()), " should be ", expected);
}

void check_weights(const RecurrentWeights& w, const RecurrentOptions& o) {
  QKV_CHECK(o.input_size > 0 && o.hidden_size > 0 && o.layers > 0, ConfigError,
            "recurrent: input_size ", o.input_size, ", hidden_size ", o.hidden_size, " and layers ",
            o.layers, " must be positive");
  const int64_t dirs = directions(o), gh = gates_per_unit(w.cell) * o.hidden_size;
  QKV_CHECK(int64_t(w.cells.size()) == o.layers * dirs, ConfigError, "recurrent: ", w.cells.size(),
            " cell weights for ", o.layers, " layers x ", dirs, " directions (expected ",
            o.layers * dirs, ")");
  for (size_t k = 0; k < w.cells.size(); ++k) {
    const CellWeights& c = w.cells[k];
    const int64_t in = k < size_t(dirs) ? o.input_size : dirs * o.hidden_size;
    check_shape("cells.w_ih", k, c.w_ih, {gh, in});
    check_shape("cells.w_hh", k, c.w_hh, {gh, o.hidden_size});
    if (c.b_ih.defined()) check_shape("cells.b_ih", k, c.b_ih, {gh});
    if (c.b_hh.defined()) check_shape("cells.b_hh", k, c.b_hh, {gh});
  }
}

// Empty -> zeros (constants); otherwise one [B, H] per cell.
std::vector<Variable> state_or_zeros(std::string_view what, const std::vector<Variable>& given,
                                     size_t cells, const Shape& shape, DType dtype) {
  if (given.empty()) return std::vector<Variable>(cells, Variable(Tensor::zeros(shape, dtype)));
  QKV_CHECK(given.size() == cells, ConfigError, "recurrent: initial ", what, " has ", given.size(),
            " entries for ", cells, " layers x directions");
  for (size_t k = 0; k < cells; ++k) check_shape(what, k, given[k], shape);
  return given;
}

// x [N, in] -> x W_ihᵀ + b_ih [N, G·H].
Variable project(const Variable& x, const Variable& w, const Variable& b) {
  const Variable y = autograd::matmul(x, w, {.transpose_b = true});
  return b.defined() ? autograd::add_bias(y, b) : y;
}

struct CellState {
  Variable h, c;  // [B, H]; c only for LSTM
};

CellState cell_step(CellKind kind, const Variable& gx, const CellWeights& w, const CellState& s) {
  const Variable gh = project(s.h, w.w_hh, w.b_hh);
  if (kind == CellKind::Gru) return {autograd::gru_cell(gx, gh, s.h), {}};
  const autograd::LstmCellOutput o = autograd::lstm_cell(gx, gh, s.c);
  return {o.h, o.c};
}

struct DirectionRun {
  CellState final;
  std::vector<Variable> outputs;  // T entries of [B, H]
};

// One direction of one layer over gx [B, T, G·H] (the input GEMM done for all steps).
DirectionRun run_direction(CellKind kind, const Variable& gx, const CellWeights& w,
                           std::span<const int64_t> lengths, bool reverse, CellState state) {
  const int64_t batch = gx.value().dim(0), steps = gx.value().dim(1);
  const DType dtype = gx.value().dtype();
  const Variable zeros(Tensor::zeros(state.h.value().shape(), dtype));
  DirectionRun run{{}, std::vector<Variable>(size_t(steps))};
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = reverse ? steps - 1 - i : i;
    std::vector<double> is_real(size_t(batch), 0.0);  // 1 where step t is a real token
    int64_t real = 0;
    for (size_t b = 0; b < is_real.size(); ++b) {
      is_real[b] = t < lengths[b] ? 1.0 : 0.0;
      real += t < lengths[b];
    }
    if (real == 0) {  // past every sequence's end: nothing to compute
      run.outputs[size_t(t)] = zeros;
      continue;
    }
    const Variable gx_t = autograd::select(gx, 1, t);
    if (real == batch) {
      const CellState next = cell_step(kind, gx_t, w, state);
      state = next;
      run.outputs[size_t(t)] = next.h;
      continue;
    }
    const Tensor mask = Tensor::from(Shape{batch}, is_real).to(dtype);
    // A padded row's step is computed and thrown away. Gathering the real rows and
    // scattering them back copies ~G·H + 2H floats per row, about what the products of
    // one row in twenty take (H = 256: 5 KiB against 1.2 MFLOP forward and backward), so
    // a step with a few padded rows runs the whole batch, one with ≥ 10 % (most steps of
    // an unbucketed batch) only the real rows.
    if (10 * real > 9 * batch) {
      const CellState next = cell_step(kind, gx_t, w, state);
      // Padded rows keep their state; their output is zero.
      state.h = autograd::masked_blend(next.h, state.h, mask);
      if (kind == CellKind::Lstm) state.c = autograd::masked_blend(next.c, state.c, mask);
      run.outputs[size_t(t)] = autograd::masked_blend(next.h, zeros, mask);
      continue;
    }
    // Only the real rows step: gathered, stepped, scattered back with zeros (the step's
    // output); padded rows keep their state.
    std::vector<int64_t> rows;
    for (int64_t b = 0; b < batch; ++b)
      if (is_real[size_t(b)] != 0.0) rows.push_back(b);
    const CellState sub{autograd::gather_rows(state.h, rows),
                        kind == CellKind::Lstm ? autograd::gather_rows(state.c, rows) : Variable()};
    const CellState next = cell_step(kind, autograd::gather_rows(gx_t, rows), w, sub);
    const Variable h = autograd::scatter_rows(next.h, rows, batch);
    state.h = autograd::masked_blend(h, state.h, mask);
    if (kind == CellKind::Lstm)
      state.c = autograd::masked_blend(autograd::scatter_rows(next.c, rows, batch), state.c, mask);
    run.outputs[size_t(t)] = h;
  }
  run.final = state;
  return run;
}

void check_inputs(const RecurrentOptions& o, const Variable& x, std::span<const int64_t> lengths) {
  const Shape& s = x.value().shape();
  QKV_CHECK(s.rank() == 3 && s[2] == o.input_size, ShapeError, "recurrent: x ", describe(x.value()),
            " must be [B, T, ", o.input_size, "]");
  QKV_CHECK(s[0] > 0 && s[1] > 0, ShapeError, "recurrent: x ", describe(x.value()), " is empty");
  QKV_CHECK(int64_t(lengths.size()) == s[0], ShapeError, "recurrent: ", lengths.size(),
            " lengths for a batch of ", s[0]);
  for (size_t b = 0; b < lengths.size(); ++b)
    QKV_CHECK(lengths[b] >= 0 && lengths[b] <= s[1], ValueError, "recurrent: lengths[", b,
              "] = ", lengths[b], " is outside [0, T = ", s[1], "]");
}

}  // namespace

int64_t gates_per_unit(CellKind cell) noexcept {
  return cell == CellKind::Gru ? 3 : 4;
}

RecurrentOutput run_recurrent(const RecurrentWeights& weights, const RecurrentOptions& options,
                              const autograd::Variable& x, std::span<const int64_t> lengths,
                              const RecurrentState& initial, Dropout* between_layers) {
  check_weights(weights, options);
  check_inputs(options, x, lengths);
  const Shape& s = x.value().shape();
  const int64_t dirs = directions(options), H = options.hidden_size;
  const auto cells = size_t(options.layers * dirs);
  const Shape state_shape{s[0], H};
  const bool lstm = weights.cell == CellKind::Lstm;
  const std::vector<Variable> h0 =
      state_or_zeros("h", initial.h, cells, state_shape, x.value().dtype());
  const std::vector<Variable> c0 =
      lstm ? state_or_zeros("c", initial.c, cells, state_shape, x.value().dtype())
           : std::vector<Variable>();
  // The real positions of the flattened [B·T] rows. With ≥ 10 % padding (an unbucketed
  // batch has ~35 %) the input GEMMs run on these only: padded steps never read their gx,
  // and the gather and scatter cost less than the products they skip.
  std::vector<int64_t> real_rows;
  for (int64_t b = 0; b < s[0]; ++b)
    for (int64_t t = 0; t < lengths[size_t(b)]; ++t) real_rows.push_back(b * s[1] + t);
  const bool pack = !real_rows.empty() && 10 * int64_t(real_rows.size()) <= 9 * s[0] * s[1];
  RecurrentOutput out;
  Variable input = x;
  for (int64_t layer = 0; layer < options.layers; ++layer) {
    if (layer > 0 && between_layers) input = between_layers->forward(input);
    const int64_t in = input.value().dim(2);
    Variable rows = autograd::reshape(input, {s[0] * s[1], in});
    if (pack) rows = autograd::gather_rows(rows, real_rows);
    std::vector<Variable> halves;
    for (int64_t d = 0; d < dirs; ++d) {
      const auto k = size_t(layer * dirs + d);
      const CellWeights& w = weights.cells[k];
      Variable g = project(rows, w.w_ih, w.b_ih);  // all T steps in one GEMM
      if (pack) g = autograd::scatter_rows(g, real_rows, s[0] * s[1]);
      const Variable gx = autograd::reshape(g, {s[0], s[1], g.value().dim(1)});
      DirectionRun run =
          run_direction(weights.cell, gx, w, lengths, d == 1, {h0[k], lstm ? c0[k] : Variable()});
      out.final_state.h.push_back(run.final.h);
      if (lstm) out.final_state.c.push_back(run.final.c);
      halves.push_back(autograd::stack(run.outputs, 1));  // [B, T, H]
    }
    input = dirs == 1 ? halves[0] : autograd::concat(halves, -1);
  }
  out.outputs = input;
  return out;
}

RecurrentState recurrent_step(const RecurrentWeights& weights, const RecurrentOptions& options,
                              const autograd::Variable& x_t, const RecurrentState& state,
                              Dropout* between_layers) {
  QKV_CHECK(!options.bidirectional, ConfigError,
            "recurrent step: a bidirectional stack needs the whole sequence (use run_recurrent)");
  check_weights(weights, options);
  const Shape& s = x_t.value().shape();
  QKV_CHECK(s.rank() == 2 && s[1] == options.input_size && s[0] > 0, ShapeError,
            "recurrent step: x_t ", describe(x_t.value()), " must be [B, ", options.input_size,
            "] with B > 0");
  const auto cells = size_t(options.layers);
  const Shape state_shape{s[0], options.hidden_size};
  const bool lstm = weights.cell == CellKind::Lstm;
  const std::vector<Variable> h =
      state_or_zeros("h", state.h, cells, state_shape, x_t.value().dtype());
  const std::vector<Variable> c =
      lstm ? state_or_zeros("c", state.c, cells, state_shape, x_t.value().dtype())
           : std::vector<Variable>();
  RecurrentState next;
  Variable input = x_t;
  for (size_t layer = 0; layer < cells; ++layer) {
    if (layer > 0 && between_layers) input = between_layers->forward(input);
    const CellWeights& w = weights.cells[layer];
    const CellState n = cell_step(weights.cell, project(input, w.w_ih, w.b_ih), w,
                                  {h[layer], lstm ? c[layer] : Variable()});
    next.h.push_back(n.h);
    if (lstm) next.c.push_back(n.c);
    input = n.h;
  }
  return next;
}

}  // namespace qkv::nn
