// The rnn encoder-decoder's layers (Luong et al. 2015; Bahdanau et al. 2015).
#include "detail/rnn_layers.h"

#include <cmath>

#include "qkv/autograd/functions.h"

namespace qkv::models::detail {
namespace {

nn::CellKind cell_kind(CellType cell) {
  return cell == CellType::Gru ? nn::CellKind::Gru : nn::CellKind::Lstm;
}

nn::RecurrentOptions encoder_options(const ModelConfig& c) {
  return {.input_size = c.dim_emb,
          .hidden_size = c.dim_rnn,
          .layers = c.enc_depth,
          .bidirectional = true,
          .bias = true,
          .dropout = c.dropout};
}

// The decoder's input: y_{t-1} [E], then h̃_{t-1} [H] (input feeding) or the context
// c_t [2H] (Bahdanau).
nn::RecurrentOptions decoder_options(const ModelConfig& c) {
  int64_t input = c.dim_emb;
  if (c.input_feeding) input += c.dim_rnn;
  if (c.attention == AttentionKind::Additive) input += 2 * c.dim_rnn;
  return {.input_size = input,
          .hidden_size = c.dim_rnn,
          .layers = c.dec_depth,
          .bidirectional = false,
          .bias = true,
          .dropout = c.dropout};
}

// Bahdanau's deep output (appendix A.2.2) reads [s_t; c_t; y_{t-1}]; we simplify its
// maxout layer to one Linear + tanh. Everyone else reads one H-vector.
int64_t readout_inputs(const ModelConfig& c) {
  return c.attention == AttentionKind::Additive ? 3 * c.dim_rnn + c.dim_emb : c.dim_rnn;
}

attention::ScoreKind score_kind(AttentionKind a) {
  switch (a) {
    case AttentionKind::Dot:
      return attention::ScoreKind::Dot;
    case AttentionKind::ScaledDot:
      return attention::ScoreKind::ScaledDot;
    case AttentionKind::Cosine:
      return attention::ScoreKind::Cosine;
    case AttentionKind::General:
      return attention::ScoreKind::General;
    case AttentionKind::Additive:
      return attention::ScoreKind::Additive;
    case AttentionKind::None:
      break;
  }
  QKV_THROW(InternalError, "rnn: attention ", to_string(a), " has no score function");
}

// x [B, T, D] · w [D, A] -> [B, T, A] (one GEMM over the rows).
Variable project_rows(const Variable& x, const Variable& w) {
  const Shape& s = x.value().shape();
  const Variable flat = autograd::reshape(x, {s[0] * s[1], s[2]});
  return autograd::reshape(autograd::matmul(flat, w), {s[0], s[1], w.value().dim(1)});
}

// x [B, L·H] -> L entries of [B, H].
std::vector<Variable> split_layers(const Variable& x, int64_t layers, int64_t hidden) {
  const Variable r = autograd::reshape(x, {x.value().dim(0), layers, hidden});
  std::vector<Variable> out;
  for (int64_t l = 0; l < layers; ++l) out.push_back(autograd::select(r, 1, l));
  return out;
}

}  // namespace

RnnLayers::RnnLayers(nn::ParameterStore& store, const ModelConfig& config)
    : config_(config),
      tables_(store, config, /*scale_by_sqrt_dim=*/false),
      source_dropout_(store, "encoder.embeddings_dropout", config.dropout),
      target_dropout_(store, "decoder.embeddings_dropout", config.dropout),
      readout_dropout_(store, "decoder.readout_dropout", config.dropout),
      encoder_(store, "encoder.rnn", cell_kind(config.cell), encoder_options(config)),
      decoder_(store, "decoder.rnn", cell_kind(config.cell), decoder_options(config)),
      bridge_h_(store, "bridge.h", 2 * config.dim_rnn, config.dec_depth * config.dim_rnn),
      readout_(store, "decoder.readout", readout_inputs(config), config.dim_emb) {
  const int64_t H = config.dim_rnn, A = config.dim_rnn;
  if (config.cell == CellType::Lstm)
    bridge_c_.emplace(store, "bridge.c", 2 * H, config.dec_depth * H);
  if (luong()) {
    // The bidirectional annotations are 2H wide; Luong's scores and W_c work in the
    // decoder's H (sec. 3.1 assumes equal sizes), so project them once (no bias).
    memory_proj_.emplace(store, "attention.memory_proj", 2 * H, H, /*bias=*/false);
    combine_.emplace(store, "attention.combine", 2 * H, H, /*bias=*/false);  // W_c, eq. 5
    if (config.attention == AttentionKind::General)
      score_.w = store.add("attention.w", {H, H}, nn::xavier_uniform_init());
  } else if (config.attention == AttentionKind::Additive) {
    score_.w = store.add("attention.w", {H, A}, nn::xavier_uniform_init());
    score_.u = store.add("attention.u", {2 * H, A}, nn::xavier_uniform_init());
    score_.b = store.add("attention.b", {A}, nn::zeros_init());
    score_.v = store.add("attention.v", {A}, nn::uniform_init(1.0 / std::sqrt(double(A))));
  }
}

bool RnnLayers::luong() const noexcept {
  const AttentionKind a = config_.attention;
  return a != AttentionKind::None && a != AttentionKind::Additive;
}

RnnEncoded RnnLayers::encode(const Tensor& src, std::span<const int64_t> lengths) {
  const Variable embedded = tables_.source(src);  // [B, Ts, E]
  const nn::RecurrentOutput out = encoder_.forward(source_dropout_.forward(embedded), lengths);
  const auto top = size_t(2 * (config_.enc_depth - 1));  // the top layer's forward cell
  RnnEncoded e{out.outputs, {out.final_state.h[top], out.final_state.h[top + 1]}, embedded};
  if (config_.cell == CellType::Lstm) {
    e.final_states.push_back(out.final_state.c[top]);
    e.final_states.push_back(out.final_state.c[top + 1]);
  }
  return e;
}

RnnDecoderVars RnnLayers::bridge(std::span<const Variable> finals) const {
  const int64_t batch = finals[0].value().dim(0), H = config_.dim_rnn, L = config_.dec_depth;
  RnnDecoderVars s;
  const Variable h =
      autograd::tanh(bridge_h_.forward(autograd::concat({finals[0], finals[1]}, -1)));
  s.h = split_layers(h, L, H);
  if (bridge_c_) {
    // The cell state is unbounded, so no tanh here.
    s.c = split_layers(bridge_c_->forward(autograd::concat({finals[2], finals[3]}, -1)), L, H);
  }
  if (config_.input_feeding) s.feed = zeros({batch, H}, finals[0].value().dtype());  // h̃_0 = 0
  return s;
}

RnnMemory RnnLayers::prepare_memory(const Variable& memory,
                                    std::span<const int64_t> lengths) const {
  if (luong()) {
    const Variable k = memory_proj_->forward(memory);
    return {k, k, lengths};
  }
  if (config_.attention == AttentionKind::Additive)
    return {project_rows(memory, score_.u), memory, lengths};
  return {{}, {}, lengths};
}

std::pair<Variable, Variable> RnnLayers::luong_attend(const Variable& h, const RnnMemory& memory,
                                                      bool want_weights) const {
  attention::MaskSpec mask;
  mask.key_lengths.assign(memory.lengths.begin(), memory.lengths.end());
  attention::AttentionOptions options;
  options.kind = score_kind(config_.attention);
  options.need_weights = want_weights;
  const attention::AttentionOutput a =
      attention::attend(h, memory.keys, memory.values, mask, score_, options);
  const Variable h_tilde = autograd::tanh(combine_->forward(autograd::concat({a.context, h}, -1)));
  return {h_tilde, a.weights};
}

// The same function as attention::attend(s, memory, memory, lengths, {w, u, b, v},
// Additive) on its fused path (autograd::additive_scores: no [B, Ts, A] tanh tensor is
// stored), except that U·h_j comes precomputed in memory.keys: attend() would redo that
// [Ts, 2H] x [2H, A] product at every decoder step. (Tested equal to attend().)
std::pair<Variable, Variable> RnnLayers::additive_attend(const Variable& s,
                                                         const RnnMemory& memory) const {
  const int64_t batch = s.value().dim(0), A = score_.v.value().dim(0);
  const Variable qp = autograd::add_bias(autograd::matmul(s, score_.w), score_.b);  // [B, A]
  const Variable e =
      autograd::additive_scores(autograd::reshape(qp, {batch, 1, A}), memory.keys, score_.v);
  ops::SoftmaxMask mask;
  mask.valid_lengths = memory.lengths;                    // one query row per batch row
  const Variable a = autograd::softmax(e, mask);          // [B, 1, Ts]
  const Variable c = autograd::matmul(a, memory.values);  // [B, 1, 2H]
  return {autograd::reshape(c, {batch, c.value().dim(2)}), a};
}

RnnLayers::AdditiveStep RnnLayers::additive_recur(const Variable& y, const RnnDecoderVars& state,
                                                  const RnnMemory& memory) {
  // Bahdanau: the context is scored from the previous state s_{t-1} and feeds the cell
  // (eq. 4: s_t = f(s_{t-1}, y_{t-1}, c_t)).
  auto [context, weights] = additive_attend(state.h.back(), memory);
  nn::RecurrentState next =
      decoder_.step(autograd::concat({y, context}, -1), nn::RecurrentState{state.h, state.c});
  return {std::move(next), context, weights};
}

Variable RnnLayers::additive_readout(const Variable& s, const Variable& context,
                                     const Variable& y) {
  // The output reads [s_t; c_t; y_{t-1}].
  return autograd::tanh(readout_.forward(autograd::concat({s, context, y}, -1)));
}

RnnStepResult RnnLayers::step(const Variable& y, const RnnDecoderVars& state,
                              const RnnMemory& memory, bool want_weights) {
  const nn::RecurrentState s{state.h, state.c};
  RnnStepResult r;
  nn::RecurrentState next;
  if (config_.attention == AttentionKind::None) {
    // The bottleneck: nothing here reads the source; it arrived through h_0 only.
    next = decoder_.step(y, s);
    r.readout = readout_.forward(next.h.back());
  } else if (config_.attention == AttentionKind::Additive) {
    AdditiveStep a = additive_recur(y, state, memory);
    r.readout = additive_readout(a.next.h.back(), a.context, y);
    if (want_weights) r.weights = a.weights;
    next = std::move(a.next);
  } else {
    // Luong: attend from the new top state h_t (sec. 3.1); input feeding (sec. 3.3) joins
    // h̃_{t-1} to the input.
    const Variable x = config_.input_feeding ? autograd::concat({y, state.feed}, -1) : y;
    next = decoder_.step(x, s);
    const Variable h = next.h.back();
    const int64_t batch = h.value().dim(0), H = h.value().dim(1);
    auto [h_tilde, weights] =
        luong_attend(autograd::reshape(h, {batch, 1, H}), memory, want_weights);
    const Variable flat = autograd::reshape(h_tilde, {batch, H});
    r.readout = readout_.forward(flat);
    if (config_.input_feeding) r.next.feed = flat;
    r.weights = weights;
  }
  r.next.h = std::move(next.h);
  r.next.c = std::move(next.c);
  return r;
}

Variable RnnLayers::decode_sequence(const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                                    const RnnDecoderVars& initial, const RnnMemory& memory) {
  const Variable y = embed_target(tgt_in);  // [B, Tt, E]
  const bool recurrence_reads_attention =
      config_.input_feeding || config_.attention == AttentionKind::Additive;
  if (!recurrence_reads_attention) {
    // The recurrence does not depend on the attention: run it over all Tt steps at once
    // (one input GEMM), then attend from every position in one call.
    const Variable h = decoder_.forward(y, tgt_lengths, {initial.h, initial.c}).outputs;
    if (config_.attention == AttentionKind::None) return readout_.forward(h);
    return readout_.forward(luong_attend(h, memory, false).first);
  }
  RnnDecoderVars state = initial;
  const int64_t steps = tgt_in.dim(1);
  if (config_.attention == AttentionKind::Additive) {
    // Only the recurrence is sequential: the readout of every step runs after the loop as
    // one [B·Tt, 3H + E] x [3H + E, E] product instead of Tt small ones (and its weight
    // gradient as one product over all steps).
    std::vector<Variable> states, contexts;
    for (int64_t t = 0; t < steps; ++t) {
      AdditiveStep a = additive_recur(autograd::select(y, 1, t), state, memory);
      states.push_back(a.next.h.back());
      contexts.push_back(a.context);
      state.h = std::move(a.next.h);
      state.c = std::move(a.next.c);
    }
    return additive_readout(autograd::stack(states, 1), autograd::stack(contexts, 1), y);
  }
  std::vector<Variable> readouts;
  for (int64_t t = 0; t < steps; ++t) {
    RnnStepResult r = step(autograd::select(y, 1, t), state, memory, false);
    readouts.push_back(r.readout);
    state = std::move(r.next);
  }
  return autograd::stack(readouts, 1);  // [B, Tt, E]
}

Variable RnnLayers::logits(const Variable& readout) {
  return tables_.project(readout_dropout_.forward(readout));
}

Variable RnnLayers::loss(const Variable& readout, const Tensor& tgt_out,
                         const ops::CrossEntropyOptions& options) {
  return tables_.loss(readout_dropout_.forward(readout), tgt_out, options);
}

void RnnLayers::set_training(bool training) {
  source_dropout_.set_training(training);
  target_dropout_.set_training(training);
  readout_dropout_.set_training(training);
  encoder_.set_training(training);
  decoder_.set_training(training);
}

}  // namespace qkv::models::detail
