// Parameter counts from the config alone. They mirror the constructors (rnn_layers.cpp,
// transformer.cpp, detail/*.cpp, nn's layers); footprint_test.cpp checks them against
// the parameters make_model() registers for every kind of model.
#include "qkv/models/footprint.h"

namespace qkv::models {
namespace {

// nn::Linear(in, out) with a bias: weight [out, in] and bias [out].
double linear(double in, double out, bool bias = true) {
  return in * out + (bias ? out : 0);
}

// nn::LayerNorm(dim): weight and bias [dim].
double layer_norm(double dim) {
  return 2 * dim;
}

// nn::Recurrent: per layer and direction weight_ih [g·H, in], weight_hh [g·H, H] and two
// biases [g·H]; the first layer reads `input`, the others dirs·H.
double recurrent(const ModelConfig& c, double input, int64_t layers, int dirs) {
  const double gates = c.cell == CellType::Gru ? 3 : 4, h = double(c.dim_rnn);
  double total = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const double in = l == 0 ? input : dirs * h;
    total += dirs * (gates * h * in + gates * h * h + 2 * gates * h);
  }
  return total;
}

// detail::TokenTables: one [V, E] table (tied), else two and an output Linear(E, V).
double token_tables(const ModelConfig& c) {
  const double v = double(c.vocab_size), e = double(c.dim_emb);
  return c.tied_embeddings ? v * e : 2 * v * e + linear(e, v);
}

double rnn_parameters(const ModelConfig& c) {
  const double e = double(c.dim_emb), h = double(c.dim_rnn);
  const bool additive = c.attention == AttentionKind::Additive;
  const bool luong = c.attention != AttentionKind::None && !additive;
  double decoder_input = e;
  if (c.input_feeding) decoder_input += h;
  if (additive) decoder_input += 2 * h;
  double total = token_tables(c) + recurrent(c, e, c.enc_depth, 2) +
                 recurrent(c, decoder_input, c.dec_depth, 1);
  const double bridge = linear(2 * h, double(c.dec_depth) * h);
  total += c.cell == CellType::Lstm ? 2 * bridge : bridge;
  if (luong) {
    total += linear(2 * h, h, false) + linear(2 * h, h, false);  // memory_proj, combine
    if (c.attention == AttentionKind::General) total += h * h;
  } else if (additive) {
    total += h * h + 2 * h * h + 2 * h;  // w [H, A], u [2H, A], b [A], v [A] with A = H
  }
  return total + linear(additive ? 3 * h + e : h, e);  // readout
}

double transformer_parameters(const ModelConfig& c) {
  const double e = double(c.dim_emb), f = double(c.dim_ffn);
  const double attention = 4 * linear(e, e);  // q, k, v and out projections
  const double ffn = linear(e, f) + linear(f, e);
  const double encoder_layer = 2 * layer_norm(e) + attention + ffn;
  const double decoder_layer = 3 * layer_norm(e) + 2 * attention + ffn;
  return token_tables(c) + 2 * layer_norm(e) + double(c.enc_depth) * encoder_layer +
         double(c.dec_depth) * decoder_layer;
}

}  // namespace

ModelFootprint footprint(const ModelConfig& config) {
  validate(config);
  if (config.type == ModelType::Rnn) return {rnn_parameters(config), 0};
  return {transformer_parameters(config), double(config.max_positions) * double(config.dim_emb)};
}

}  // namespace qkv::models
