#include "qkv/experiment/attention_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/decode/force_decode.h"
#include "qkv/experiment/test_set.h"

namespace qkv::experiment {
namespace {

// The (layer, head) selections whose rows are averaged: the rnn's one attention, or
// every cross-attention head of every Transformer decoder layer.
std::vector<models::AttentionSelection> selections(const models::ModelConfig& config) {
  if (config.type != models::ModelType::Transformer) return {{.layer = -1, .head = -1}};
  std::vector<models::AttentionSelection> out;
  for (int64_t l = 0; l < config.dec_depth; ++l)
    for (int64_t h = 0; h < config.heads; ++h) out.push_back({.layer = l, .head = h});
  return out;
}

bool attends(const models::ModelConfig& config) {
  return config.type == models::ModelType::Transformer ||
         config.attention != models::AttentionKind::None;
}

}  // namespace

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
  if (!attends(config)) return std::nullopt;
  model.set_training(false);
  // A Transformer's positions hold the source and its EOS, the target and its BOS.
  const int64_t max_tokens = config.type == models::ModelType::Transformer
                                 ? config.max_positions - 1
                                 : std::numeric_limits<int64_t>::max();
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
  const std::vector<models::AttentionSelection> which = selections(config);
  out.heads = int64_t(which.size());
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
    for (const models::AttentionSelection& w : which) {
      const std::vector<std::vector<float>> att =
          decode::forced_attention(model, b.src, b.src_lengths, targets, w);
      for (size_t k = 0; k < att.size(); ++k) {
        const auto ts = size_t(b.src_lengths[k]);
        for (size_t r = 0; r + ts <= att[k].size(); r += ts)
          entropy_sum += row_entropy(std::span(att[k]).subspan(r, ts));
      }
    }
  }
  out.mean = entropy_sum / (double(out.rows) * double(out.heads));
  out.uniform = uniform_sum / double(out.rows);
  return out;
}

}  // namespace qkv::experiment
