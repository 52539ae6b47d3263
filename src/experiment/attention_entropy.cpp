#include "qkv/experiment/attention_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/decode/force_decode.h"
#include "qkv/experiment/test_set.h"

namespace qkv::experiment {

double row_entropy(std::span<const float> weights) {
  double h = 0;
  for (const float w : weights)
    if (w > 0) h -= double(w) * std::log(double(w));
  return h;
}

std::optional<AttentionEntropy> attention_entropy(models::Seq2Seq& model, const data::Vocab& vocab,
                                                  std::span<const std::string> sources,
                                                  std::span<const std::string> references,
                                                  int64_t mini_batch) {
  QKV_CHECK(sources.size() == references.size(), ValueError, "attention entropy: ", sources.size(),
            " sources but ", references.size(), " references");
  QKV_CHECK(mini_batch >= 1, ConfigError, "attention entropy: mini-batch ", mini_batch,
            " must be at least 1");
  const models::ModelConfig& config = model.config();
  if (!models::attends(config)) return std::nullopt;
  model.set_training(false);
  const int64_t max_tokens = models::max_sequence_tokens(config);
  AttentionEntropy out;
  std::vector<std::vector<int32_t>> src(sources.size()), tgt(sources.size());
  std::vector<size_t> usable;
  for (size_t i = 0; i < sources.size(); ++i) {
    src[i] = vocab.encode(sources[i]);
    tgt[i] = vocab.encode(references[i]);
    if (src[i].empty() || tgt[i].empty() || int64_t(src[i].size()) > max_tokens ||
        int64_t(tgt[i].size()) > max_tokens)
      ++out.skipped;
    else
      usable.push_back(i);
  }
  if (usable.empty()) return std::nullopt;
  std::stable_sort(usable.begin(), usable.end(),
                   [&](size_t a, size_t b) { return src[a].size() < src[b].size(); });
  double entropy_sum = 0, uniform_sum = 0;
  const auto mini = size_t(mini_batch);
  for (size_t begin = 0; begin < usable.size(); begin += mini) {
    const size_t end = std::min(usable.size(), begin + mini);
    std::vector<std::vector<int32_t>> rows, targets;
    for (size_t k = begin; k < end; ++k) {
      rows.push_back(src[usable[k]]);
      targets.push_back(tgt[usable[k]]);
    }
    const data::Batch b = source_batch(rows, config);
    for (size_t k = 0; k < targets.size(); ++k) {
      const int64_t steps = int64_t(targets[k].size()) + 1;  // every token, then EOS
      out.rows += steps;
      uniform_sum += double(steps) * std::log(double(b.src_lengths[k]));
    }
    // Every layer and head in one pass: decoding once per head cost 12 passes for a
    // 3-layer, 4-head Transformer.
    const decode::AllForcedAttention att =
        decode::forced_attention_all(model, b.src, b.src_lengths, targets);
    out.heads = att.distributions;
    for (size_t k = 0; k < att.rows.size(); ++k) {
      const auto ts = size_t(b.src_lengths[k]);
      for (size_t r = 0; r + ts <= att.rows[k].size(); r += ts)
        entropy_sum += row_entropy(std::span(att.rows[k]).subspan(r, ts));
    }
  }
  QKV_CHECK(out.heads > 0, ValueError, "attention entropy: the model reported no attention");
  out.mean = entropy_sum / (double(out.rows) * double(out.heads));
  out.uniform = uniform_sum / double(out.rows);
  return out;
}

}  // namespace qkv::experiment
