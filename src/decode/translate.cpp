// The decoding driver: encode, skip, sort, batch, check memory, search, scatter back.
#include <algorithm>
#include <numeric>

#include "qkv/base/error.h"
#include "qkv/base/sort_by_length.h"
#include "qkv/data/batcher.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/decode/greedy.h"
#include "qkv/decode/translator.h"

namespace qkv::decode {
namespace {

// The limit on a side's subword tokens: max_length (0: none) within the model's own.
int64_t token_limit(const models::ModelConfig& config, int64_t max_length) {
  const int64_t model_limit = models::max_sequence_tokens(config);
  return max_length > 0 ? std::min(max_length, model_limit) : model_limit;
}

void check_batching(const TranslateOptions& o) {
  QKV_CHECK(o.max_length >= 0, ConfigError, "max_length ", o.max_length, " must be >= 0");
  QKV_CHECK(o.mini_batch >= 1, ConfigError, "mini_batch ", o.mini_batch, " must be at least 1");
  QKV_CHECK(o.batch_tokens >= 0, ConfigError, "batch_tokens ", o.batch_tokens, " must be >= 0");
}

// Indices of the usable results, ordered by source length (stable), so a batch holds
// similar lengths and little padding.
template <class Result>
std::vector<size_t> usable_by_length(const std::vector<Result>& results) {
  std::vector<size_t> order;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].ok()) order.push_back(i);
  sort_by_length(order, [&](size_t i) { return results[i].token_count; });
  return order;
}

// beam_size 1 through greedy_decode (the same choices: beam_search's tie-break), tokens
// only. The batch's limit is its longest row's; each row is then cut to its own.
std::vector<std::vector<Hypothesis>> greedy(models::Seq2Seq& model, const data::Batch& b,
                                            const BeamSearchOptions& search) {
  const models::ModelConfig& config = model.config();
  int64_t limit = 1;
  for (const int64_t n : b.src_lengths)
    limit = std::max(limit, max_target_length(search, n, config));
  std::vector<std::vector<int32_t>> out = greedy_decode(model, b.src, b.src_lengths, limit);
  std::vector<std::vector<Hypothesis>> hyps(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const auto own = size_t(max_target_length(search, b.src_lengths[i], config));
    if (out[i].size() > own) out[i].resize(own);
    Hypothesis h;
    h.tokens = std::move(out[i]);
    h.source_length = b.src_lengths[i];
    hyps[i].push_back(std::move(h));
  }
  return hyps;
}

TranslatedHypothesis translated(const data::Vocab& vocab, Hypothesis&& h) {
  TranslatedHypothesis t;
  t.text = vocab.decode(h.tokens);
  t.tokens = std::move(h.tokens);
  t.score = h.score;
  t.log_prob = h.log_prob;
  t.token_log_probs = std::move(h.token_log_probs);
  t.attention = std::move(h.attention);
  t.finished = h.finished;
  return t;
}

// The end of the batch that starts at order[begin]: at most mini_batch sentences and,
// with a token budget, at most batch_tokens source tokens with padding (sentences x the
// longest, which is the last: `order` is sorted by length); always at least one.
size_t batch_end(const std::vector<SentenceResult>& results, const std::vector<size_t>& order,
                 size_t begin, const TranslateOptions& options) {
  const size_t last = std::min(order.size(), begin + size_t(options.mini_batch));
  size_t end = begin + 1;
  while (end < last && (options.batch_tokens == 0 ||
                        int64_t(end - begin + 1) * int64_t(results[order[end]].source.size()) <=
                            options.batch_tokens))
    ++end;
  return end;
}

// Searches the usable results in batches and fills in their hypotheses.
void search_all(models::Seq2Seq& model, const data::Vocab& vocab,
                std::vector<SentenceResult>& results, const TranslateOptions& options) {
  const BeamSearchOptions& search = options.search;
  const bool fast = !options.scores && search.beam_size == 1 && !search.keep_attention;
  const std::vector<size_t> order = usable_by_length(results);
  for (size_t begin = 0, end = 0; begin < order.size(); begin = end) {
    end = batch_end(results, order, begin, options);
    const std::span<const size_t> which = std::span(order).subspan(begin, end - begin);
    std::vector<std::vector<int32_t>> rows;
    for (const size_t i : which)
      rows.emplace_back(results[i].source.begin(), results[i].source.end() - 1);
    const data::Batch b = source_batch(rows, model.config());
    check_beam_search_memory(model.config(), search, b.src.dim(0), b.src.dim(1),
                             options.memory_advice);
    auto hyps = fast ? greedy(model, b, search) : beam_search(model, b.src, b.src_lengths, search);
    for (size_t r = 0; r < which.size(); ++r)
      for (Hypothesis& h : hyps[r])
        results[which[r]].hypotheses.push_back(translated(vocab, std::move(h)));
  }
}

// A result for source tokens `ids` under `limit`: skipped when empty or too long.
SentenceResult sentence(std::vector<int32_t> ids, int64_t limit, int32_t eos) {
  SentenceResult r;
  r.token_count = int64_t(ids.size());
  r.token_limit = limit;
  if (ids.empty())
    r.skipped = SkipReason::NoTokens;
  else if (r.token_count > limit)
    r.skipped = SkipReason::TooLong;
  if (!r.ok()) return r;
  r.source = std::move(ids);
  r.source.push_back(eos);
  return r;
}

// The path translate and translate_tokens share: `make(input, limit, eos)` turns each
// input into its result (encoded, or skipped with its reason), then the search runs.
template <class Input, class Make>
std::vector<SentenceResult> drive(models::Seq2Seq& model, const data::Vocab& vocab,
                                  std::span<const Input> inputs, const TranslateOptions& options,
                                  Make make) {
  check_batching(options);
  validate(options.search, model.config());
  model.set_training(false);
  const int64_t limit = token_limit(model.config(), options.max_length);
  const auto eos = int32_t(model.config().eos_id);
  std::vector<SentenceResult> results;
  results.reserve(inputs.size());
  for (const Input& input : inputs) results.push_back(make(input, limit, eos));
  search_all(model, vocab, results, options);
  return results;
}

}  // namespace

std::string describe(SkipReason reason, int64_t tokens, int64_t limit) {
  switch (reason) {
    case SkipReason::None:
      return {};
    case SkipReason::Blank:
      return "empty line";
    case SkipReason::NoTokens:
      return "no subword tokens after normalisation";
    case SkipReason::TooLong:
      return std::to_string(tokens) + " subword tokens, more than the " + std::to_string(limit) +
             " allowed";
    case SkipReason::NoTarget:
      return "empty target sentence";
  }
  return {};
}

data::Batch source_batch(const std::vector<std::vector<int32_t>>& rows,
                         const models::ModelConfig& config) {
  data::TokenizedCorpus corpus;
  corpus.source = rows;
  corpus.line_numbers.resize(rows.size());
  std::vector<int64_t> indices(rows.size());
  std::iota(indices.begin(), indices.end(), 0);
  data::BatchOptions options;
  options.pad_id = int32_t(config.pad_id);
  options.bos_id = int32_t(config.bos_id);
  options.eos_id = int32_t(config.eos_id);
  return data::make_batch(corpus, indices, options);
}

std::vector<SentenceResult> translate(models::Seq2Seq& model, const data::Vocab& vocab,
                                      std::span<const std::string> sentences,
                                      const TranslateOptions& options) {
  return drive(model, vocab, sentences, options,
               [&](const std::string& s, int64_t limit, int32_t eos) {
                 if (data::is_blank(s))
                   return SentenceResult{.skipped = SkipReason::Blank, .token_limit = limit};
                 return sentence(vocab.encode(s), limit, eos);
               });
}

std::vector<SentenceResult> translate_tokens(models::Seq2Seq& model, const data::Vocab& vocab,
                                             std::span<const std::vector<int32_t>> rows,
                                             const TranslateOptions& options) {
  return drive(model, vocab, rows, options,
               [](const std::vector<int32_t>& row, int64_t limit, int32_t eos) {
                 return sentence(row, limit, eos);
               });
}

}  // namespace qkv::decode
