#include "qkv/experiment/attention_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/sort_by_length.h"
#include "qkv/decode/translator.h"

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
  // Every layer and head of each pair in one teacher-forced pass; pairs with an empty
  // side or longer than the model's positions are skipped.
  decode::ScoreOptions options;
  options.mini_batch = mini_batch;
  options.allow_empty_target = false;
  options.all_attention = true;
  const std::vector<decode::ScoreResult> results =
      decode::score(model, vocab, sources, references, options);
  AttentionEntropy out;
  std::vector<size_t> usable;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok())
      usable.push_back(i);
    else
      ++out.skipped;
  }
  if (usable.empty()) return std::nullopt;
  // Summed in the driver's batch order (by source length), as before it moved there.
  sort_by_length(usable, [&](size_t i) { return results[i].token_count; });
  double entropy_sum = 0, uniform_sum = 0;
  for (const size_t i : usable) {
    const decode::ScoreResult& r = results[i];
    const auto ts = size_t(r.source_length);
    out.heads = r.distributions;
    const auto steps =
        int64_t(r.attention.size() / (ts * size_t(std::max<int64_t>(r.distributions, 1))));
    out.rows += steps;  // every token, then EOS
    uniform_sum += double(steps) * std::log(double(ts));
    for (size_t k = 0; k + ts <= r.attention.size(); k += ts)
      entropy_sum += row_entropy(std::span(r.attention).subspan(k, ts));
  }
  QKV_CHECK(out.heads > 0, ValueError, "attention entropy: the model reported no attention");
  out.mean = entropy_sum / (double(out.rows) * double(out.heads));
  out.uniform = uniform_sum / double(out.rows);
  return out;
}

}  // namespace qkv::experiment
