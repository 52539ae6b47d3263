#include "model_test_util.h"

#include <algorithm>

#include "qkv/ops/sequence.h"
#include "qkv/ops/softmax.h"

namespace qkv::models::testing {

ModelConfig tiny_rnn(AttentionKind attention, CellType cell, bool input_feeding) {
  ModelConfig c;
  c.type = ModelType::Rnn;
  c.attention = attention;
  c.cell = cell;
  c.vocab_size = kVocab;
  c.dim_emb = 6;
  c.dim_rnn = 5;
  c.enc_depth = 2;
  c.dec_depth = 2;
  c.dropout = 0.0;
  c.input_feeding = input_feeding;
  return c;
}

ModelConfig tiny_transformer() {
  ModelConfig c;
  c.type = ModelType::Transformer;
  c.attention = AttentionKind::ScaledDot;
  c.vocab_size = kVocab;
  c.dim_emb = 8;
  c.heads = 2;
  c.dim_ffn = 12;
  c.enc_depth = 2;
  c.dec_depth = 2;
  c.dropout = 0.0;
  c.max_positions = 64;
  return c;
}

std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (const CellType cell : {CellType::Gru, CellType::Lstm})
    for (const AttentionKind a :
         {AttentionKind::None, AttentionKind::Dot, AttentionKind::ScaledDot, AttentionKind::Cosine,
          AttentionKind::General, AttentionKind::Additive}) {
      std::string name = "rnn_" + std::string(to_string(a)) + "_" + std::string(to_string(cell));
      std::replace(name.begin(), name.end(), '-', '_');
      v.push_back({name, tiny_rnn(a, cell)});
    }
  v.push_back(
      {"rnn_general_lstm_input_feeding", tiny_rnn(AttentionKind::General, CellType::Lstm, true)});
  v.push_back({"rnn_dot_gru_input_feeding", tiny_rnn(AttentionKind::Dot, CellType::Gru, true)});
  v.push_back({"transformer", tiny_transformer()});
  ModelConfig untied = tiny_transformer();
  untied.tied_embeddings = false;
  v.push_back({"transformer_untied", untied});
  ModelConfig rnn_untied = tiny_rnn(AttentionKind::Additive, CellType::Lstm);
  rnn_untied.tied_embeddings = false;
  v.push_back({"rnn_additive_lstm_untied", rnn_untied});
  return v;
}

namespace {

Tensor padded(const std::vector<std::vector<int64_t>>& rows, int64_t prefix, int64_t suffix) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  const auto t = int64_t(width) + (prefix >= 0 ? 1 : 0) + (suffix >= 0 ? 1 : 0);
  Tensor out = Tensor::zeros({int64_t(rows.size()), t});
  for (size_t b = 0; b < rows.size(); ++b) {
    int64_t j = 0;
    if (prefix >= 0) out.at<float>({int64_t(b), j++}) = float(prefix);
    for (const int64_t id : rows[b]) out.at<float>({int64_t(b), j++}) = float(id);
    if (suffix >= 0) out.at<float>({int64_t(b), j++}) = float(suffix);
  }
  return out;
}

}  // namespace

Batch make_batch(const std::vector<std::vector<int64_t>>& src,
                 const std::vector<std::vector<int64_t>>& tgt) {
  Batch b;
  b.src = padded(src, -1, -1);
  b.tgt_in = padded(tgt, 2, -1);
  b.tgt_out = padded(tgt, -1, 3);
  for (const auto& r : src) b.src_lengths.push_back(int64_t(r.size()));
  for (const auto& r : tgt) b.tgt_lengths.push_back(int64_t(r.size()) + 1);
  return b;
}

Tensor row(const Tensor& x, int64_t b) {
  return x.slice(0, b, b + 1).contiguous();
}

Batch row_of(const Batch& batch, int64_t b) {
  const int64_t ts = batch.src_lengths[size_t(b)], tt = batch.tgt_lengths[size_t(b)];
  Batch r;
  r.src = row(batch.src, b).slice(1, 0, ts).contiguous();
  r.tgt_in = row(batch.tgt_in, b).slice(1, 0, tt).contiguous();
  r.tgt_out = row(batch.tgt_out, b).slice(1, 0, tt).contiguous();
  r.src_lengths = {ts};
  r.tgt_lengths = {tt};
  return r;
}

Batch sample_batch() {
  return make_batch({{4, 5, 6, 7, 3}, {8, 9, 3}, {10, 4, 5, 3}},
                    {{7, 6, 5, 4}, {9, 8}, {5, 4, 10}});
}

Tensor log_softmax_of(const Tensor& logits) {
  return ops::log_softmax(logits);
}

Stepped step_through(Seq2Seq& model, const Batch& batch, bool want_attention,
                     const AttentionSelection& which) {
  const EncoderOutput enc = model.encode(batch.src, batch.src_lengths);
  std::unique_ptr<DecoderState> state = model.initial_state(enc);
  Stepped out;
  for (int64_t t = 0; t < batch.tgt_in.dim(1); ++t) {
    const Tensor ids = ops::select(batch.tgt_in, 1, t).contiguous();
    StepOutput s = model.step(ids, *state, want_attention, which);
    out.log_probs.push_back(s.log_probs);
    out.attention.push_back(s.attention);
  }
  return out;
}

}  // namespace qkv::models::testing
