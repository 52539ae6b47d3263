#include "qkv/decode/force_decode.h"

#include <algorithm>

#include "detail/rows.h"
#include "qkv/autograd/variable.h"
#include "qkv/base/error.h"
#include "qkv/ops/softmax.h"

namespace qkv::decode {
namespace {

// Checks targets against the batch and the vocabulary; returns the longest target.
size_t check_targets(const models::ModelConfig& c, std::span<const int64_t> src_lengths,
                     std::span<const std::vector<int32_t>> targets, const char* who) {
  QKV_CHECK(targets.size() == src_lengths.size(), ShapeError, who, ": ", targets.size(),
            " targets for ", src_lengths.size(), " source rows");
  size_t longest = 0;
  for (size_t b = 0; b < targets.size(); ++b) {
    for (size_t t = 0; t < targets[b].size(); ++t)
      QKV_CHECK(targets[b][t] >= 0 && targets[b][t] < c.vocab_size, IndexError, who,
                ": target row ", b, " position ", t, ": id ", targets[b][t], " outside [0, ",
                c.vocab_size, ")");
    longest = std::max(longest, targets[b].size());
  }
  return longest;
}

// Feeds BOS and then each target token (padding for rows whose target ended) through
// step() with attention, calling on_step(t, output) after step t (t = 0 .. longest
// target); stops early when on_step returns false.
template <class OnStep>
void forced_steps(models::Seq2Seq& model, const Tensor& src, std::span<const int64_t> src_lengths,
                  std::span<const std::vector<int32_t>> targets,
                  const models::AttentionSelection& which, const char* who, OnStep on_step) {
  const models::ModelConfig& c = model.config();
  const auto batch = int64_t(targets.size());
  const auto steps = int64_t(check_targets(c, src_lengths, targets, who)) + 1;
  if (batch == 0) return;
  const models::EncoderOutput encoded = model.encode(src, src_lengths);
  std::unique_ptr<models::DecoderState> state = model.initial_state(encoded);
  std::vector<float> ids(static_cast<size_t>(batch));
  for (int64_t t = 0; t < steps; ++t) {
    // Rows whose target ended are fed padding: their outputs are not read.
    for (int64_t b = 0; b < batch; ++b) {
      const std::vector<int32_t>& y = targets[size_t(b)];
      ids[size_t(b)] =
          t == 0 ? float(c.bos_id)
                 : (t - 1 < int64_t(y.size()) ? float(y[size_t(t - 1)]) : float(c.pad_id));
    }
    if (!on_step(t, model.step(Tensor::from({batch}, ids), *state, /*want_attention=*/true, which)))
      return;
  }
}

// Appends step t's attention rows a [B, Ts] (real source tokens only) to out[b] for every
// row whose target (plus its EOS step) is not yet past.
void append_rows(const Tensor& attention, int64_t t, std::span<const int64_t> src_lengths,
                 std::span<const std::vector<int32_t>> targets,
                 std::vector<std::vector<float>>& out) {
  const Tensor a = detail::as_f32(attention);
  for (size_t b = 0; b < targets.size(); ++b) {
    if (t > int64_t(targets[b].size())) continue;
    const float* row = a.data<float>() + int64_t(b) * a.dim(1);
    out[b].insert(out[b].end(), row, row + src_lengths[b]);
  }
}

}  // namespace

std::vector<std::vector<float>> force_decode(models::Seq2Seq& model, const Tensor& src,
                                             std::span<const int64_t> src_lengths,
                                             std::span<const std::vector<int32_t>> targets) {
  const models::ModelConfig& c = model.config();
  const auto batch = int64_t(targets.size());
  const auto width = int64_t(check_targets(c, src_lengths, targets, "force_decode")) + 1;
  if (batch == 0) return {};
  // tgt_in [B, Tt] = BOS + y, then pad; tgt_lengths = |y| + 1 (the EOS prediction).
  std::vector<float> ids(size_t(batch * width), float(c.pad_id));
  std::vector<int64_t> lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t>& y = targets[size_t(b)];
    ids[size_t(b * width)] = float(c.bos_id);
    for (size_t t = 0; t < y.size(); ++t) ids[size_t(b * width) + t + 1] = float(y[t]);
    lengths[size_t(b)] = int64_t(y.size()) + 1;
  }
  Tensor tgt_in = Tensor::from({batch, width}, ids);
  if (src.dtype() != tgt_in.dtype()) tgt_in = tgt_in.to(src.dtype());

  const autograd::NoGradGuard no_grad;
  const Tensor logits = model.forward_train(src, src_lengths, tgt_in, lengths).value();
  const int64_t vocab = logits.dim(2);
  const Tensor lp =
      detail::as_f32(ops::log_softmax(logits.contiguous().reshape({batch * width, vocab})));
  const float* p = lp.data<float>();
  std::vector<std::vector<float>> out(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t>& y = targets[size_t(b)];
    for (int64_t t = 0; t < lengths[size_t(b)]; ++t) {
      const int64_t id = t < int64_t(y.size()) ? y[size_t(t)] : c.eos_id;
      out[size_t(b)].push_back(p[(b * width + t) * vocab + id]);
    }
  }
  return out;
}

std::vector<std::vector<float>> forced_attention(models::Seq2Seq& model, const Tensor& src,
                                                 std::span<const int64_t> src_lengths,
                                                 std::span<const std::vector<int32_t>> targets,
                                                 const models::AttentionSelection& which) {
  std::vector<std::vector<float>> out(targets.size());
  bool attends = true;
  forced_steps(model, src, src_lengths, targets, which, "forced_attention",
               [&](int64_t t, const models::StepOutput& step) {
                 if (!step.attention.defined()) {
                   attends = false;
                   return false;
                 }
                 append_rows(step.attention, t, src_lengths, targets, out);
                 return true;
               });
  if (!attends) return std::vector<std::vector<float>>(targets.size());
  return out;
}

AllForcedAttention forced_attention_all(models::Seq2Seq& model, const Tensor& src,
                                        std::span<const int64_t> src_lengths,
                                        std::span<const std::vector<int32_t>> targets) {
  AllForcedAttention out;
  out.rows.resize(targets.size());
  // Per distribution, per row: its [T_b + 1, Ts_b] block, joined at the end.
  std::vector<std::vector<std::vector<float>>> blocks;
  bool attends = true;
  forced_steps(
      model, src, src_lengths, targets, {.every_layer = true}, "forced_attention_all",
      [&](int64_t t, const models::StepOutput& step) {
        if (!step.attention.defined()) {
          attends = false;
          return false;
        }
        std::vector<Tensor> heads;  // [B, Ts] each, in distribution order
        if (!step.layer_attention.empty()) {
          for (const Tensor& layer : step.layer_attention)  // [B, H, Ts]
            for (int64_t h = 0; h < layer.dim(1); ++h)
              heads.push_back(
                  layer.slice(1, h, h + 1).contiguous().reshape({layer.dim(0), layer.dim(2)}));
        } else {
          heads.push_back(step.attention);
        }
        blocks.resize(heads.size(), std::vector<std::vector<float>>(targets.size()));
        for (size_t d = 0; d < heads.size(); ++d)
          append_rows(heads[d], t, src_lengths, targets, blocks[d]);
        return true;
      });
  if (!attends || targets.empty()) return out;
  out.distributions = int64_t(blocks.size());
  for (const auto& block : blocks)
    for (size_t b = 0; b < targets.size(); ++b)
      out.rows[b].insert(out.rows[b].end(), block[b].begin(), block[b].end());
  return out;
}

}  // namespace qkv::decode
