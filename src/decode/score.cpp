// Forced decoding through the driver: encode both sides, skip, sort, batch, check memory,
// score, scatter back.
#include <algorithm>

#include "qkv/base/error.h"
#include "qkv/base/memory.h"
#include "qkv/base/sort_by_length.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/decode/force_decode.h"
#include "qkv/decode/translator.h"

namespace qkv::decode {
namespace {

// The pair's result before scoring; `source` / `target` hold the encoded sides.
ScoreResult encoded_pair(const std::vector<int32_t>& source, const std::vector<int32_t>& target,
                         int64_t limit, const ScoreOptions& options) {
  ScoreResult r;
  r.token_limit = limit;
  r.token_count = int64_t(source.size());
  if (source.empty()) {
    r.skipped = SkipReason::NoTokens;
  } else if (int64_t(source.size()) > limit || int64_t(target.size()) > limit) {
    r.skipped = SkipReason::TooLong;
    r.token_count = int64_t(std::max(source.size(), target.size()));
  } else if (target.empty() && !options.allow_empty_target) {
    r.skipped = SkipReason::NoTarget;
  }
  r.source_length = r.ok() ? int64_t(source.size()) + 1 : 0;
  return r;
}

// Scores one batch of pairs (`which` into the results) and stores their outputs.
void score_batch(models::Seq2Seq& model, std::span<const size_t> which,
                 const std::vector<std::vector<int32_t>>& src,
                 const std::vector<std::vector<int32_t>>& tgt, std::vector<ScoreResult>& results,
                 const ScoreOptions& options) {
  const models::ModelConfig& c = model.config();
  std::vector<std::vector<int32_t>> rows, targets;
  for (const size_t i : which) {
    rows.push_back(src[i]);
    targets.push_back(tgt[i]);
  }
  const data::Batch b = source_batch(rows, c);
  size_t longest = 0;
  for (const std::vector<int32_t>& t : targets) longest = std::max(longest, t.size());
  check_memory(force_decode_bytes(c, b.src.dim(0), b.src.dim(1), int64_t(longest) + 1),
               "scoring " + std::to_string(rows.size()) + " pairs of up to " +
                   std::to_string(b.src.dim(1)) + " source and " + std::to_string(longest + 1) +
                   " target tokens (vocabulary " + std::to_string(c.vocab_size) + ")",
               options.memory_advice);
  if (!options.all_attention) {
    const auto lp = force_decode(model, b.src, b.src_lengths, targets);
    for (size_t r = 0; r < which.size(); ++r) {
      ScoreResult& out = results[which[r]];
      out.token_log_probs = lp[r];
      for (const float x : lp[r]) out.log_prob += double(x);
    }
    return;
  }
  // Every layer and head in one pass: decoding once per head cost 12 passes for a
  // 3-layer, 4-head Transformer.
  AllForcedAttention att = forced_attention_all(model, b.src, b.src_lengths, targets);
  for (size_t r = 0; r < which.size(); ++r) {
    results[which[r]].distributions = att.distributions;
    results[which[r]].attention = std::move(att.rows[r]);
  }
}

}  // namespace

std::vector<ScoreResult> score(models::Seq2Seq& model, const data::Vocab& vocab,
                               std::span<const std::string> sources,
                               std::span<const std::string> targets, const ScoreOptions& options) {
  QKV_CHECK(sources.size() == targets.size(), ValueError, "score: ", sources.size(),
            " sources but ", targets.size(), " targets");
  QKV_CHECK(options.max_length >= 0, ConfigError, "max_length ", options.max_length,
            " must be >= 0");
  QKV_CHECK(options.mini_batch >= 1, ConfigError, "mini_batch ", options.mini_batch,
            " must be at least 1");
  model.set_training(false);
  const int64_t model_limit = models::max_sequence_tokens(model.config());
  const int64_t limit =
      options.max_length > 0 ? std::min(options.max_length, model_limit) : model_limit;
  std::vector<std::vector<int32_t>> src(sources.size()), tgt(sources.size());
  std::vector<ScoreResult> results;
  results.reserve(sources.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i) {
    src[i] = vocab.encode(sources[i]);
    tgt[i] = vocab.encode(targets[i]);
    results.push_back(encoded_pair(src[i], tgt[i], limit, options));
    if (results.back().ok()) order.push_back(i);
  }
  sort_by_length(order, [&](size_t i) { return src[i].size(); });
  const auto mini = size_t(options.mini_batch);
  for (size_t begin = 0; begin < order.size(); begin += mini)
    score_batch(model, std::span(order).subspan(begin, std::min(mini, order.size() - begin)), src,
                tgt, results, options);
  return results;
}

}  // namespace qkv::decode
