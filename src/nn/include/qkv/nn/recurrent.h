// Multi-layer, optionally bidirectional GRU and LSTM over padded batches, with fused
// cells (kernels/recurrent.h), in PyTorch's parameter layout and names (weight_ih_l0,
// weight_hh_l0_reverse, ...; gate order r, z, n and i, f, g, o).
//
// Per layer and direction: gx = x W_ihᵀ + b_ih for all time steps as ONE GEMM, then per
// step gh = h W_hhᵀ + b_hh and the fused cell. Padded batches: step t of sequence b is
// real when t < lengths[b]; at padded steps the state does not change (masked_blend), so
// the forward direction ends at each sequence's last real token and the reverse
// direction starts there; outputs at padded positions are zero. Padded rows are not
// computed where skipping them pays: a step with ≥ 10 % padded rows gathers the real
// ones, steps them and scatters them back (with fewer, the whole batch steps, masked);
// steps where no sequence is real are skipped; with ≥ 10 % padding the input GEMM runs on
// the real positions only. A padded batch gives the same result as each sequence run
// alone.
//
// Two layers of API: the functional core (run_recurrent / recurrent_step over explicit
// weights: also what gradient checks differentiate) and the GRU / LSTM layers that own
// their weights in a ParameterStore.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qkv/nn/dropout.h"
#include "qkv/nn/parameters.h"

namespace qkv::nn {

enum class CellKind { Gru, Lstm };

// Gate blocks per hidden unit: 3 (GRU) or 4 (LSTM).
int64_t gates_per_unit(CellKind cell) noexcept;

struct RecurrentOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;  // H
  int64_t layers = 1;
  bool bidirectional = false;
  bool bias = true;
  // Dropout on each layer's outputs except the last layer's, training mode only
  // (PyTorch's `dropout` argument).
  double dropout = 0.0;
};

// One layer and direction. G = gates_per_unit; in = input_size (layer 0) or dirs·H.
struct CellWeights {
  autograd::Variable w_ih;  // [G·H, in]
  autograd::Variable w_hh;  // [G·H, H]
  autograd::Variable b_ih;  // [G·H]; undefined when the layer has no bias
  autograd::Variable b_hh;  // [G·H]; undefined when the layer has no bias
};

struct RecurrentWeights {
  CellKind cell = CellKind::Gru;
  // Index layer·dirs + direction (direction 1: reverse).
  std::vector<CellWeights> cells;
};

// One [B, H] entry per layer and direction, indexed like RecurrentWeights::cells. c is
// the LSTM cell state (empty for GRU). An empty RecurrentState means zeros.
struct RecurrentState {
  std::vector<autograd::Variable> h;
  std::vector<autograd::Variable> c;
};

struct RecurrentOutput {
  autograd::Variable outputs;  // [B, T, dirs·H] (forward half first); 0 at t >= lengths[b]
  // Forward direction: the state after each sequence's last real token; reverse: after
  // its first token (having read the sequence backwards from its last real token).
  RecurrentState final_state;
};

// x [B, T, input_size], lengths [B] with 0 <= lengths[b] <= T (ValueError naming the
// entry); initial: empty or one [B, H] per cell. ShapeError / ConfigError name the
// offending tensor. between_layers (optional) is applied to every layer's output except
// the last's.
RecurrentOutput run_recurrent(const RecurrentWeights& weights, const RecurrentOptions& options,
                              const autograd::Variable& x, std::span<const int64_t> lengths,
                              const RecurrentState& initial = {},
                              Dropout* between_layers = nullptr);

// One time step of every layer of a unidirectional stack (ConfigError if bidirectional):
// x_t [B, input_size], state (one [B, H] per layer, or empty for zeros) -> the new state;
// the top layer's output is result.h.back(). For decoders.
RecurrentState recurrent_step(const RecurrentWeights& weights, const RecurrentOptions& options,
                              const autograd::Variable& x_t, const RecurrentState& state,
                              Dropout* between_layers = nullptr);

// The layer: owns its weights in a store under PyTorch's names.
class Recurrent {
 public:
  // Registers prefix.weight_ih_l{k}[_reverse] [G·H, in], weight_hh_l{k}[_reverse] [G·H, H]
  // (Xavier uniform per gate block) and, with bias, bias_ih_/bias_hh_l{k}[_reverse] [G·H]
  // (zeros). PyTorch draws all of them from U(±1/sqrt(H)) instead; loaded weights are
  // used as they are. ConfigError for non-positive sizes or dropout outside [0, 1).
  Recurrent(ParameterStore& store, const std::string& prefix, CellKind cell,
            const RecurrentOptions& options);

  // See run_recurrent.
  RecurrentOutput forward(const autograd::Variable& x, std::span<const int64_t> lengths,
                          const RecurrentState& initial = {});
  // See recurrent_step.
  RecurrentState step(const autograd::Variable& x_t, const RecurrentState& state);
  // Zeros [B, H] for every layer and direction (and c for LSTM), in the store's dtype.
  RecurrentState initial_state(int64_t batch) const;

  void set_training(bool training) noexcept { dropout_.set_training(training); }
  const RecurrentOptions& options() const noexcept { return options_; }
  const RecurrentWeights& weights() const noexcept { return weights_; }

 private:
  RecurrentOptions options_;
  RecurrentWeights weights_;
  Dropout dropout_;
  DType dtype_;
};

class GRU : public Recurrent {
 public:
  GRU(ParameterStore& store, const std::string& prefix, const RecurrentOptions& options)
      : Recurrent(store, prefix, CellKind::Gru, options) {}
};

class LSTM : public Recurrent {
 public:
  LSTM(ParameterStore& store, const std::string& prefix, const RecurrentOptions& options)
      : Recurrent(store, prefix, CellKind::Lstm, options) {}
};

}  // namespace qkv::nn
