// The GRU / LSTM layers: PyTorch's parameter names and shapes in a ParameterStore,
// around the functional core in recurrent.cpp.
#include <string>

#include "qkv/nn/recurrent.h"

namespace qkv::nn {
namespace {

// "weight_ih_l0", "bias_hh_l1_reverse", ... (torch.nn.GRU / LSTM state_dict keys).
std::string torch_name(const char* kind, int64_t layer, bool reverse) {
  return std::string(kind) + "_l" + std::to_string(layer) + (reverse ? "_reverse" : "");
}

}  // namespace

Recurrent::Recurrent(ParameterStore& store, const std::string& prefix, CellKind cell,
                     const RecurrentOptions& options)
    : options_(options),
      weights_{cell, {}},
      dropout_(store, child_name(prefix, "dropout"), options.dropout),
      dtype_(store.dtype()) {
  QKV_CHECK(options.input_size > 0 && options.hidden_size > 0 && options.layers > 0, ConfigError,
            cell == CellKind::Gru ? "GRU " : "LSTM ", prefix, ": input_size ", options.input_size,
            ", hidden_size ", options.hidden_size, " and layers ", options.layers,
            " must be positive");
  const int64_t dirs = options.bidirectional ? 2 : 1, H = options.hidden_size;
  const int64_t gates = gates_per_unit(cell);
  for (int64_t layer = 0; layer < options.layers; ++layer)
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t in = layer == 0 ? options.input_size : dirs * H;
      auto name = [&](const char* kind) { return child_name(prefix, torch_name(kind, layer, d)); };
      CellWeights w;
      w.w_ih = store.add(name("weight_ih"), {gates * H, in}, xavier_uniform_init(gates));
      w.w_hh = store.add(name("weight_hh"), {gates * H, H}, xavier_uniform_init(gates));
      if (options.bias) {
        w.b_ih = store.add(name("bias_ih"), {gates * H}, zeros_init());
        w.b_hh = store.add(name("bias_hh"), {gates * H}, zeros_init());
      }
      weights_.cells.push_back(w);
    }
}

RecurrentOutput Recurrent::forward(const autograd::Variable& x, std::span<const int64_t> lengths,
                                   const RecurrentState& initial) {
  return run_recurrent(weights_, options_, x, lengths, initial, &dropout_);
}

RecurrentState Recurrent::step(const autograd::Variable& x_t, const RecurrentState& state) {
  return recurrent_step(weights_, options_, x_t, state, &dropout_);
}

RecurrentState Recurrent::initial_state(int64_t batch) const {
  QKV_CHECK(batch > 0, ValueError, "initial_state: batch ", batch, " must be positive");
  const size_t cells = weights_.cells.size();
  const Shape shape{batch, options_.hidden_size};
  RecurrentState s;
  for (size_t k = 0; k < cells; ++k) {
    s.h.emplace_back(Tensor::zeros(shape, dtype_));
    if (weights_.cell == CellKind::Lstm) s.c.emplace_back(Tensor::zeros(shape, dtype_));
  }
  return s;
}

}  // namespace qkv::nn
