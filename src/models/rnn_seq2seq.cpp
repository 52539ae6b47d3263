// RnnSeq2Seq: the Seq2Seq interface over detail::RnnLayers, and its decoder state.
#include "qkv/models/rnn_seq2seq.h"

#include "detail/common.h"
#include "detail/rnn_layers.h"
#include "detail/source_rows.h"
#include "qkv/autograd/functions.h"

namespace qkv::models {
namespace {

using autograd::Variable;

std::vector<Variable> constants(const std::vector<Tensor>& ts) {
  return {ts.begin(), ts.end()};
}

std::vector<Tensor> values(const std::vector<Variable>& vs) {
  std::vector<Tensor> out;
  for (const Variable& v : vs) out.push_back(v.value());
  return out;
}

// The decoder's carry between steps, as plain tensors (decoding records no tape).
class RnnState final : public DecoderState {
 public:
  std::vector<Tensor> h, c;  // [B, H] per decoder layer (c: LSTM only)
  Tensor feed;               // [B, H] h̃_{t-1} with input feeding, else undefined
  // See detail::RnnMemory; undefined without attention. Per row, copied from the
  // per-source tensors only when a row changes sentence.
  detail::SourceRows keys, values;
  std::vector<int64_t> lengths;
  int64_t t = 0;

  int64_t batch_size() const noexcept override { return int64_t(lengths.size()); }
  int64_t steps() const noexcept override { return t; }
  void reorder(std::span<const int64_t> indices) override {
    for (Tensor& x : h) x = detail::gather_rows(x, indices);
    for (Tensor& x : c) x = detail::gather_rows(x, indices);
    if (feed.defined()) feed = detail::gather_rows(feed, indices);
    for (detail::SourceRows* x : {&keys, &values})
      if (x->defined()) x->reorder(indices);
    lengths = detail::gather_rows(lengths, indices);
  }
};

void check_encoded(const EncoderOutput& e, const ModelConfig& c) {
  const Tensor& m = e.memory;
  QKV_CHECK(m.defined() && m.rank() == 3 && m.dim(2) == 2 * c.dim_rnn, ShapeError,
            "rnn initial_state: memory ", m.defined() ? describe(m) : std::string("undefined"),
            " must be [B, Ts, ", 2 * c.dim_rnn, "]");
  QKV_CHECK(int64_t(e.lengths.size()) == m.dim(0), ShapeError,
            "rnn initial_state: ", e.lengths.size(), " lengths for a batch of ", m.dim(0));
  for (size_t b = 0; b < e.lengths.size(); ++b)
    QKV_CHECK(e.lengths[b] >= 1 && e.lengths[b] <= m.dim(1), ValueError,
              "rnn initial_state: lengths[", b, "] = ", e.lengths[b],
              " is outside [1, Ts = ", m.dim(1), "]");
  const size_t expected = c.cell == CellType::Lstm ? 4 : 2;
  QKV_CHECK(e.final_states.size() == expected, ValueError,
            "rnn initial_state: ", e.final_states.size(), " final states, expected ", expected,
            " (h fwd, h bwd", expected == 4 ? ", c fwd, c bwd)" : ")");
  for (size_t i = 0; i < expected; ++i) {
    const Tensor& f = e.final_states[i];
    QKV_CHECK(f.defined() && f.shape() == Shape({m.dim(0), c.dim_rnn}), ShapeError,
              "rnn initial_state: final_states[", i, "] ",
              f.defined() ? describe(f) : std::string("undefined"), " must be [", m.dim(0), ", ",
              c.dim_rnn, "]");
  }
}

}  // namespace

RnnSeq2Seq::RnnSeq2Seq(const ModelConfig& config, uint64_t seed, DType dtype)
    : config_(config), store_(seed, dtype) {
  validate(config);
  QKV_CHECK(config.type == ModelType::Rnn, ConfigError, "RnnSeq2Seq: model config type is ",
            to_string(config.type), ", not rnn");
  layers_ = std::make_unique<detail::RnnLayers>(store_, config_);
}

RnnSeq2Seq::~RnnSeq2Seq() = default;

EncoderOutput RnnSeq2Seq::encode(const Tensor& src, std::span<const int64_t> src_lengths) {
  detail::check_sequences("src", src, src_lengths);
  const autograd::NoGradGuard no_grad;
  const detail::RnnEncoded e = layers_->encode(src, src_lengths);
  return {e.memory.value(), {src_lengths.begin(), src_lengths.end()}, values(e.final_states)};
}

std::unique_ptr<DecoderState> RnnSeq2Seq::initial_state(const EncoderOutput& encoded) {
  check_encoded(encoded, config_);
  const autograd::NoGradGuard no_grad;
  const std::vector<Variable> finals = constants(encoded.final_states);
  const detail::RnnDecoderVars s = layers_->bridge(finals);
  const detail::RnnMemory m = layers_->prepare_memory(Variable(encoded.memory), encoded.lengths);
  auto state = std::make_unique<RnnState>();
  state->h = values(s.h);
  state->c = values(s.c);
  if (s.feed.defined()) state->feed = s.feed.value();
  if (m.keys.defined()) {
    state->keys = detail::SourceRows(m.keys.value());
    state->values = detail::SourceRows(m.values.value());
  }
  state->lengths = encoded.lengths;
  return state;
}

StepOutput RnnSeq2Seq::step(const Tensor& prev_ids, DecoderState& state, bool want_attention,
                            const AttentionSelection& which) {
  auto* s = dynamic_cast<RnnState*>(&state);
  QKV_CHECK(s != nullptr, ValueError, "rnn step: the state was not made by an rnn model");
  QKV_CHECK(which.layer >= -1 && which.layer <= 0 && which.head >= -1 && which.head <= 0,
            ConfigError, "rnn step: attention layer ", which.layer, " / head ", which.head,
            ": an rnn has one attention (use -1 or 0)");
  detail::check_step_ids(prev_ids, s->batch_size());
  const autograd::NoGradGuard no_grad;
  const detail::RnnDecoderVars vars{constants(s->h), constants(s->c),
                                    s->feed.defined() ? Variable(s->feed) : Variable()};
  const detail::RnnMemory memory{s->keys.defined() ? Variable(s->keys.rows()) : Variable(),
                                 s->values.defined() ? Variable(s->values.rows()) : Variable(),
                                 s->lengths};
  const detail::RnnStepResult r =
      layers_->step(layers_->embed_target(prev_ids), vars, memory, want_attention);
  StepOutput out;
  out.log_probs = detail::step_log_probs(layers_->logits(r.readout));
  if (want_attention && r.weights.defined()) {
    const Tensor& w = r.weights.value();  // [B, 1, Ts]
    out.attention = w.reshape({w.dim(0), w.dim(2)});
  }
  s->h = values(r.next.h);
  s->c = values(r.next.c);
  if (r.next.feed.defined()) s->feed = r.next.feed.value();
  ++s->t;
  return out;
}

Variable RnnSeq2Seq::forward_train(const Tensor& src, std::span<const int64_t> src_lengths,
                                   const Tensor& tgt_in, std::span<const int64_t> tgt_lengths) {
  EncoderTaps unused;
  return forward_train_tapped(src, src_lengths, tgt_in, tgt_lengths, unused);
}

Variable RnnSeq2Seq::forward_train_loss(const Tensor& src, std::span<const int64_t> src_lengths,
                                        const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                                        const Tensor& tgt_out,
                                        const ops::CrossEntropyOptions& options) {
  detail::check_targets(tgt_out, tgt_in);
  EncoderTaps unused;
  return layers_->loss(readouts(src, src_lengths, tgt_in, tgt_lengths, unused), tgt_out, options);
}

Variable RnnSeq2Seq::forward_train_tapped(const Tensor& src, std::span<const int64_t> src_lengths,
                                          const Tensor& tgt_in,
                                          std::span<const int64_t> tgt_lengths, EncoderTaps& taps) {
  return layers_->logits(readouts(src, src_lengths, tgt_in, tgt_lengths, taps));
}

Variable RnnSeq2Seq::readouts(const Tensor& src, std::span<const int64_t> src_lengths,
                              const Tensor& tgt_in, std::span<const int64_t> tgt_lengths,
                              EncoderTaps& taps) {
  detail::check_sequences("src", src, src_lengths);
  detail::check_sequences("tgt_in", tgt_in, tgt_lengths);
  QKV_CHECK(src.dim(0) == tgt_in.dim(0), ShapeError, "forward_train: src ", describe(src),
            " and tgt_in ", describe(tgt_in), " differ in batch size");
  const detail::RnnEncoded e = layers_->encode(src, src_lengths);
  // The bridge reads its own handle of each final state: in an unpadded row the forward
  // final state IS the output Variable at the last token, so its grad() would also hold
  // the attention's share of memory's gradient. A reshape (a view) separates the two.
  std::vector<Variable> finals;
  for (const Variable& f : e.final_states)
    finals.push_back(autograd::reshape(f, f.value().shape()));
  taps = {e.input, e.memory, finals};
  taps.retain_grads();
  const detail::RnnDecoderVars initial = layers_->bridge(finals);
  const detail::RnnMemory memory = layers_->prepare_memory(e.memory, src_lengths);
  return layers_->decode_sequence(tgt_in, tgt_lengths, initial, memory);
}

void RnnSeq2Seq::set_training(bool training) {
  training_ = training;
  layers_->set_training(training);
}

}  // namespace qkv::models
