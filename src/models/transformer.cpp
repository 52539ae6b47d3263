// Transformer: embeddings, the layer stacks and the Seq2Seq interface with its cache.
#include "qkv/models/transformer.h"

#include <mutex>
#include <utility>

#include "detail/common.h"
#include "detail/transformer_layers.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/thread_pool.h"
#include "qkv/nn/positions.h"
#include "qkv/ops/sequence.h"

namespace qkv::models {
namespace {

using attention::PackedBatch;

// x [B, T, E] -> its real positions [N, E] (a reshape when there is no padding).
autograd::Variable pack(const autograd::Variable& x, const PackedBatch& rows) {
  const Shape& s = x.value().shape();
  const autograd::Variable flat = autograd::reshape(x, {s[0] * s[1], s[2]});
  return rows.dense() ? flat : autograd::gather_rows(flat, rows.rows);
}

// x [N, E] at the real positions -> [B, T, E], zero at the padded ones.
autograd::Variable unpack(const autograd::Variable& x, const PackedBatch& rows) {
  const int64_t e = x.value().dim(1);
  const autograd::Variable flat =
      rows.dense() ? x : autograd::scatter_rows(x, rows.rows, rows.batch * rows.length);
  return autograd::reshape(flat, {rows.batch, rows.length, e});
}

}  // namespace

namespace detail {

// Training runs on packed rows (attention::PackedBatch): embeddings, dropout, every
// LayerNorm, projection, FFN and residual see the real positions only, and so does the
// attention kernel (it reads its heads in the projections' rows). Unbucketed batches are
// often a third padding.
class TransformerLayers {
 public:
  TransformerLayers(nn::ParameterStore& store, const ModelConfig& c)
      : config_(c),
        tables_(store, c, /*scale_by_sqrt_dim=*/true),
        positions_(store, "positions", c.max_positions, c.dim_emb),
        encoder_dropout_(store, "encoder.dropout", c.dropout),
        decoder_dropout_(store, "decoder.dropout", c.dropout),
        encoder_norm_(store, "encoder.norm", c.dim_emb),
        decoder_norm_(store, "decoder.norm", c.dim_emb) {
    encoder_.reserve(size_t(c.enc_depth));
    decoder_.reserve(size_t(c.dec_depth));
    for (int64_t l = 0; l < c.enc_depth; ++l)
      encoder_.emplace_back(store, "encoder.layers." + std::to_string(l), c.dim_emb, c.heads,
                            c.dim_ffn);
    for (int64_t l = 0; l < c.dec_depth; ++l)
      decoder_.emplace_back(store, "decoder.layers." + std::to_string(l), c.dim_emb, c.heads,
                            c.dim_ffn);
  }

  // src [B, Ts] -> memory [Ns, E] at the real source positions `rows` (after the final
  // LayerNorm). input (optional) receives the encoder's input [B, Ts, E] before dropout
  // (EncoderTaps::input).
  Variable encode(const Tensor& src, const PackedBatch& rows, Variable* input = nullptr) {
    check_length("src", src.dim(1));
    const Variable embedded = positions_.forward(tables_.source(src));
    if (input != nullptr) *input = embedded;
    Variable x = encoder_dropout_.forward(pack(embedded, rows));
    for (EncoderLayer& layer : encoder_) x = layer.forward(x, rows, encoder_dropout_);
    return encoder_norm_.forward(x);
  }

  // tgt_in [B, Tt] -> the decoder's output [Nt, E] at the real target positions
  // target_rows (after the final LayerNorm), the input of the output projection; memory
  // [Ns, E] at source_rows.
  Variable decode(const Tensor& tgt_in, const PackedBatch& target_rows, const Variable& memory,
                  const PackedBatch& source_rows) {
    check_length("tgt_in", tgt_in.dim(1));
    Variable x =
        decoder_dropout_.forward(pack(positions_.forward(tables_.target(tgt_in)), target_rows));
    for (DecoderLayer& layer : decoder_)
      x = layer.forward(x, target_rows, memory, source_rows, decoder_dropout_);
    return decoder_norm_.forward(x);
  }
  // h [..., E] -> logits [..., V].
  Variable project(const Variable& h) const { return tables_.project(h); }
  // h [N, E], targets [N] -> [] the fused projection + loss.
  Variable loss(const Variable& h, const Tensor& tgt_out,
                const ops::CrossEntropyOptions& options) const {
    return tables_.loss(h, tgt_out, options);
  }

  void prepare(const Variable& memory, std::vector<LayerCache>& caches) const {
    caches.resize(decoder_.size());
    for (size_t l = 0; l < decoder_.size(); ++l) decoder_[l].prepare(memory, caches[l]);
  }

  // prev_ids [B] at position t -> logits [B, V]. weights (optional) receives, one entry
  // per layer, the cross-attention weights [B, H, Ts] of layer `weights_layer`, or of
  // every layer when weights_layer < 0 (the others stay undefined). The context is the
  // same either way: the weights are recomputed from the fused kernel's row statistics.
  Variable step(const Tensor& prev_ids, int64_t t, std::vector<LayerCache>& caches,
                std::span<const int64_t> lengths, std::span<const int64_t> origins,
                std::vector<Tensor>* weights, int64_t weights_layer) {
    check_length("decoding", t + 1);
    const Tensor ids = prev_ids.reshape({prev_ids.dim(0), 1});
    Variable x = decoder_dropout_.forward(positions_.forward(tables_.target(ids), t));
    if (weights) weights->assign(decoder_.size(), Tensor());
    for (size_t l = 0; l < decoder_.size(); ++l) {
      const bool want = weights && (weights_layer < 0 || int64_t(l) == weights_layer);
      x = decoder_[l].step(x, caches[l], lengths, origins, decoder_dropout_,
                           want ? &(*weights)[l] : nullptr);
    }
    const Variable logits = tables_.project(decoder_norm_.forward(x));  // [B, 1, V]
    return autograd::reshape(logits, {prev_ids.dim(0), config_.vocab_size});
  }

  void set_training(bool training) {
    encoder_dropout_.set_training(training);
    decoder_dropout_.set_training(training);
  }

 private:
  void check_length(const char* what, int64_t length) const {
    QKV_CHECK(length <= config_.max_positions, ValueError, "transformer: ", what, " length ",
              length, " exceeds max_positions = ", config_.max_positions, " (model config)");
  }

  ModelConfig config_;
  TokenTables tables_;
  nn::SinusoidalPositions positions_;
  nn::Dropout encoder_dropout_, decoder_dropout_;
  std::vector<EncoderLayer> encoder_;
  std::vector<DecoderLayer> decoder_;
  nn::LayerNorm encoder_norm_, decoder_norm_;
};

// The decoder caches of finished states, for the states of later batches. A state's
// self-attention caches grow to its rows (batch × beam) × its longest output, and each
// batch's state had made them anew: decoding a file took fresh buffers (tens of MB at
// beam 4) batch after batch, first touched page by page, until glibc's heap stopped
// growing (65k page faults in the first pass over 1,000 sentences). A state takes a set
// an earlier one gave back (KvCache::clear keeps the buffers) and gives its own back when
// destroyed.
class CachePool {
 public:
  // The set kept, or none (empty).
  std::vector<LayerCache> take() {
    const std::lock_guard lock(mutex_);
    return std::exchange(spare_, {});
  }

  int64_t spare() {
    const std::lock_guard lock(mutex_);
    return spare_.empty() ? 0 : 1;
  }

  // Kept when no other set is (one set: batches decoded one after another, as qkv
  // translate and the benchmarks do, reuse it; concurrent decodes, a server's requests,
  // keep no more idle memory than one batch's caches). The memory's keys and values are
  // the batch's own: freed here; prepare() resets the rest when the set is taken.
  void give(std::vector<LayerCache>&& caches) {
    for (LayerCache& c : caches) c.cross_k = c.cross_v = c.gathered_k = c.gathered_v = Tensor();
    const std::lock_guard lock(mutex_);
    if (spare_.empty()) spare_ = std::move(caches);
  }

 private:
  std::mutex mutex_;
  std::vector<LayerCache> spare_;  // one per decoder layer, or empty: none kept
};

}  // namespace detail

namespace {

class TransformerState final : public DecoderState {
 public:
  explicit TransformerState(std::shared_ptr<detail::CachePool> from) : pool(std::move(from)) {
    caches = pool->take();
  }
  ~TransformerState() override {
    try {
      pool->give(std::move(caches));
    } catch (...) {  // the pool's lock failed: the caches are freed instead
    }
  }
  TransformerState(const TransformerState&) = delete;
  TransformerState& operator=(const TransformerState&) = delete;

  std::shared_ptr<detail::CachePool> pool;  // shared: a state may outlive its model
  std::vector<detail::LayerCache> caches;   // one per decoder layer
  std::vector<int64_t> lengths;
  // The source sentence (row of the caches' cross_k / cross_v) each row attends to.
  std::vector<int64_t> origins;
  int64_t t = 0;

  int64_t batch_size() const noexcept override { return int64_t(lengths.size()); }
  int64_t steps() const noexcept override { return t; }
  void reorder(std::span<const int64_t> indices) override {
    // Checks the indices against the batch before any cache moves a row.
    std::vector<int64_t> new_lengths = detail::gather_rows(lengths, indices);
    std::vector<int64_t> new_origins = detail::gather_rows(origins, indices);
    // The cross-attention keys and values stay one row per source (rows read them through
    // origins): a beam's expansion and a finished sentence copy none of them. The self-
    // attention caches are independent: split over the pool (at two threads their row
    // copies had been the largest serial part of beam 4), each one's moves in its order.
    std::vector<detail::KvCache*> self;
    int64_t floats = 0;
    for (detail::LayerCache& c : caches) {
      for (detail::KvCache* kv : {&c.self_k, &c.self_v}) {
        self.push_back(kv);
        const Tensor filled = kv->view();
        floats += filled.defined() ? filled.numel() : 0;
      }
    }
    auto run = [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) self[size_t(c)]->reorder(indices);
    };
    constexpr int64_t kParallelFloats = int64_t{1} << 16;  // below: not worth a hand-off
    if (floats < kParallelFloats)
      run(0, int64_t(self.size()));
    else
      parallel_for(0, int64_t(self.size()), 1, run);
    lengths = std::move(new_lengths);
    origins = std::move(new_origins);
  }
};

// w [B, H, Ts] -> head `head`'s rows, or the mean over heads (head = -1), [B, Ts].
Tensor pick_head(const Tensor& w, int64_t head) {
  const int64_t batch = w.dim(0), heads = w.dim(1), ts = w.dim(2);
  if (head >= 0) return w.slice(1, head, head + 1).contiguous().reshape({batch, ts});
  const Tensor w64 = w.to(DType::F64);
  Tensor mean = Tensor::zeros({batch, ts}, DType::F64);
  const double* in = w64.data<double>();
  double* out = mean.data<double>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < ts; ++j)
        out[b * ts + j] += in[(b * heads + h) * ts + j] / double(heads);
  return mean.to(w.dtype());
}

}  // namespace

Transformer::Transformer(const ModelConfig& config, uint64_t seed, DType dtype)
    : config_(config), store_(seed, dtype) {
  validate(config);
  QKV_CHECK(config.type == ModelType::Transformer, ConfigError,
            "Transformer: model config type is ", to_string(config.type), ", not transformer");
  layers_ = std::make_unique<detail::TransformerLayers>(store_, config_);
  cache_pool_ = std::make_shared<detail::CachePool>();
}

Transformer::~Transformer() = default;

EncoderOutput Transformer::encode(const Tensor& src, std::span<const int64_t> src_lengths) {
  detail::check_sequences("src", src, src_lengths);
  const autograd::NoGradGuard no_grad;
  const PackedBatch rows = PackedBatch::of(src_lengths, src.dim(1));
  return {unpack(layers_->encode(src, rows), rows).value(),
          {src_lengths.begin(), src_lengths.end()},
          {}};
}

int64_t Transformer::spare_decoder_caches() const {
  return cache_pool_->spare();
}

std::unique_ptr<DecoderState> Transformer::initial_state(const EncoderOutput& encoded) {
  const Tensor& m = encoded.memory;
  QKV_CHECK(m.defined() && m.rank() == 3 && m.dim(2) == config_.dim_emb &&
                int64_t(encoded.lengths.size()) == m.dim(0),
            ShapeError, "transformer initial_state: memory ",
            m.defined() ? describe(m) : std::string("undefined"), " must be [B, Ts, ",
            config_.dim_emb, "] with B = ", encoded.lengths.size(), " lengths");
  for (size_t b = 0; b < encoded.lengths.size(); ++b)
    QKV_CHECK(encoded.lengths[b] >= 1 && encoded.lengths[b] <= m.dim(1), ValueError,
              "transformer initial_state: lengths[", b, "] = ", encoded.lengths[b],
              " is outside [1, Ts = ", m.dim(1), "]");
  const autograd::NoGradGuard no_grad;
  auto state = std::make_unique<TransformerState>(cache_pool_);
  layers_->prepare(autograd::Variable(m), state->caches);
  state->lengths = encoded.lengths;
  state->origins.resize(encoded.lengths.size());
  for (size_t b = 0; b < state->origins.size(); ++b) state->origins[b] = int64_t(b);
  return state;
}

StepOutput Transformer::step(const Tensor& prev_ids, DecoderState& state, bool want_attention,
                             const AttentionSelection& which) {
  auto* s = dynamic_cast<TransformerState*>(&state);
  QKV_CHECK(s != nullptr, ValueError, "transformer step: the state was not made by a transformer");
  QKV_CHECK(which.layer >= -1 && which.layer < config_.dec_depth && which.head >= -1 &&
                which.head < config_.heads,
            ConfigError, "transformer step: attention layer ", which.layer, " / head ", which.head,
            " outside [-1, ", config_.dec_depth, ") / [-1, ", config_.heads, ")");
  detail::check_step_ids(prev_ids, s->batch_size());
  const autograd::NoGradGuard no_grad;
  const int64_t layer = which.layer < 0 ? config_.dec_depth - 1 : which.layer;
  std::vector<Tensor> weights;  // per layer [B, H, Ts]
  const autograd::Variable logits =
      layers_->step(prev_ids, s->t, s->caches, s->lengths, s->origins,
                    want_attention ? &weights : nullptr, which.every_layer ? -1 : layer);
  StepOutput out;
  out.log_probs = detail::step_log_probs(logits);
  if (want_attention) {
    out.attention = pick_head(weights[size_t(layer)], which.head);
    if (which.every_layer) out.layer_attention = std::move(weights);
  }
  ++s->t;
  return out;
}

autograd::Variable Transformer::forward_train(const Tensor& src,
                                              std::span<const int64_t> src_lengths,
                                              const Tensor& tgt_in,
                                              std::span<const int64_t> tgt_lengths) {
  const DecoderOutput d = decoder_output(src, src_lengths, tgt_in, tgt_lengths, nullptr);
  return layers_->project(unpack(d.hidden, d.target_rows));
}

autograd::Variable Transformer::forward_train_loss(const Tensor& src,
                                                   std::span<const int64_t> src_lengths,
                                                   const Tensor& tgt_in,
                                                   std::span<const int64_t> tgt_lengths,
                                                   const Tensor& tgt_out,
                                                   const ops::CrossEntropyOptions& options) {
  detail::check_targets(tgt_out, tgt_in);
  const DecoderOutput d = decoder_output(src, src_lengths, tgt_in, tgt_lengths, nullptr);
  // The targets of the real positions, in the decoder output's row order.
  const Tensor flat = tgt_out.contiguous().reshape({tgt_out.numel()});
  const Tensor targets = d.target_rows.dense() ? flat : ops::gather_rows(flat, d.target_rows.rows);
  return layers_->loss(d.hidden, targets, options);
}

autograd::Variable Transformer::forward_train_tapped(const Tensor& src,
                                                     std::span<const int64_t> src_lengths,
                                                     const Tensor& tgt_in,
                                                     std::span<const int64_t> tgt_lengths,
                                                     EncoderTaps& taps) {
  const DecoderOutput d = decoder_output(src, src_lengths, tgt_in, tgt_lengths, &taps);
  return layers_->project(unpack(d.hidden, d.target_rows));
}

Transformer::DecoderOutput Transformer::decoder_output(const Tensor& src,
                                                       std::span<const int64_t> src_lengths,
                                                       const Tensor& tgt_in,
                                                       std::span<const int64_t> tgt_lengths,
                                                       EncoderTaps* taps) {
  detail::check_sequences("src", src, src_lengths);
  detail::check_sequences("tgt_in", tgt_in, tgt_lengths);
  QKV_CHECK(src.dim(0) == tgt_in.dim(0), ShapeError, "forward_train: src ", describe(src),
            " and tgt_in ", describe(tgt_in), " differ in batch size");
  const PackedBatch source_rows = PackedBatch::of(src_lengths, src.dim(1));
  DecoderOutput out{.hidden = {}, .target_rows = PackedBatch::of(tgt_lengths, tgt_in.dim(1))};
  autograd::Variable input;
  autograd::Variable memory = layers_->encode(src, source_rows, taps != nullptr ? &input : nullptr);
  if (taps != nullptr) {
    // The taps are padded [B, Ts, E]; the decoder reads memory back from that Variable,
    // so the tap's gradient is all of memory's.
    const autograd::Variable padded = unpack(memory, source_rows);
    *taps = {input, padded, {}};
    taps->retain_grads();
    memory = pack(padded, source_rows);
  }
  out.hidden = layers_->decode(tgt_in, out.target_rows, memory, source_rows);
  return out;
}

void Transformer::set_training(bool training) {
  training_ = training;
  layers_->set_training(training);
}

}  // namespace qkv::models
