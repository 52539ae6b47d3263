// Tokenisation, padded batch tensors and the in-order batching for translation.
#include <algorithm>

#include "detail/batching.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/data/batcher.h"

namespace qkv::data {
namespace detail {

// Errors name BatchOptions' fields (FieldError); the front ends name them in their terms.
void check_batch_options(const BatchOptions& o, bool training) {
  QKV_CHECK(o.mini_batch_words > 0, FieldError, "{mini_batch_words} must be > 0, got ",
            o.mini_batch_words);
  QKV_CHECK(o.max_sentences >= 0, FieldError, "{max_sentences} (sentences per batch) must be ",
            ">= 0 (0: no limit), got ", o.max_sentences);
  QKV_CHECK(o.pad_id >= 0 && o.bos_id >= 0 && o.eos_id >= 0, ConfigError,
            "pad/bos/eos ids must be >= 0, got ", o.pad_id, "/", o.bos_id, "/", o.eos_id);
  if (!training) return;
  QKV_CHECK(o.max_length > 0, FieldError, "{max_length} must be > 0, got ", o.max_length);
  QKV_CHECK(o.mini_batch_words >= o.max_length + 1, FieldError, "{mini_batch_words} (",
            o.mini_batch_words, ") must be >= {max_length} + 1 (", o.max_length + 1,
            ") so that the longest pair (with EOS) fits in a batch");
}

int64_t src_width(const TokenizedCorpus& corpus, int64_t i, const BatchOptions& options) {
  return static_cast<int64_t>(corpus.source[static_cast<size_t>(i)].size()) +
         (options.source_eos ? 1 : 0);
}

int64_t tgt_width(const TokenizedCorpus& corpus, int64_t i) {
  if (corpus.target.empty()) return 0;
  return static_cast<int64_t>(corpus.target[static_cast<size_t>(i)].size()) + 1;
}

std::vector<std::vector<int64_t>> cut_by_budget(const TokenizedCorpus& corpus,
                                                std::span<const int64_t> order,
                                                const BatchOptions& options) {
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> current;
  int64_t ts = 0, tt = 0;
  for (int64_t i : order) {
    const int64_t s = std::max(ts, src_width(corpus, i, options));
    const int64_t t = std::max(tt, tgt_width(corpus, i));
    const auto rows = static_cast<int64_t>(current.size()) + 1;
    const bool fits = rows * std::max(s, t) <= options.mini_batch_words &&
                      (options.max_sentences == 0 || rows <= options.max_sentences);
    if (!fits && !current.empty()) {
      batches.push_back(std::move(current));
      current.clear();
      ts = src_width(corpus, i, options);
      tt = tgt_width(corpus, i);
    } else {
      ts = s;
      tt = t;
    }
    current.push_back(i);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

}  // namespace detail

namespace {

// Encodes lines [0, n) with `encode_line(i)` on the pool; chunks are independent.
template <class Fn>
std::vector<std::vector<int32_t>> encode_all(int64_t n, Fn encode_line) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
  parallel_for(0, n, 256, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[static_cast<size_t>(i)] = encode_line(i);
  });
  return out;
}

void fill_row(float* row, std::span<const int32_t> ids, int32_t first, int32_t last) {
  int64_t k = 0;
  if (first >= 0) row[k++] = static_cast<float>(first);
  for (int32_t id : ids) row[k++] = static_cast<float>(id);
  if (last >= 0) row[k++] = static_cast<float>(last);
}

}  // namespace

TokenizedCorpus tokenize(const ParallelCorpus& corpus, const Vocab& vocab) {
  QKV_CHECK(corpus.source.size() == corpus.target.size(), ValueError,
            "tokenize: ", corpus.source.size(), " source but ", corpus.target.size(),
            " target sentences");
  const auto n = static_cast<int64_t>(corpus.source.size());
  auto src = encode_all(n, [&](int64_t i) { return vocab.encode(corpus.source[size_t(i)]); });
  auto tgt = encode_all(n, [&](int64_t i) { return vocab.encode(corpus.target[size_t(i)]); });
  TokenizedCorpus out;
  out.stats = corpus.stats;
  for (size_t i = 0; i < size_t(n); ++i) {
    if (src[i].empty() || tgt[i].empty()) {
      ++out.stats.skipped_empty;
      --out.stats.kept;
      continue;
    }
    out.source.push_back(std::move(src[i]));
    out.target.push_back(std::move(tgt[i]));
    out.line_numbers.push_back(i < corpus.line_numbers.size() ? corpus.line_numbers[i]
                                                              : int64_t(i) + 1);
  }
  return out;
}

TokenizedCorpus tokenize_source(std::span<const std::string> lines, const Vocab& vocab) {
  const auto n = static_cast<int64_t>(lines.size());
  TokenizedCorpus out;
  out.source = encode_all(n, [&](int64_t i) { return vocab.encode(lines[size_t(i)]); });
  out.line_numbers.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) out.line_numbers[size_t(i)] = i + 1;
  out.stats.read = out.stats.kept = n;
  return out;
}

Batch make_batch(const TokenizedCorpus& corpus, std::span<const int64_t> indices,
                 const BatchOptions& options) {
  detail::check_batch_options(options, /*training=*/false);
  const auto n = static_cast<int64_t>(corpus.source.size());
  const bool has_target = !corpus.target.empty();
  QKV_CHECK(!indices.empty(), ValueError, "make_batch: no indices");
  QKV_CHECK(!has_target || corpus.target.size() == corpus.source.size(), ValueError,
            "make_batch: ", corpus.source.size(), " source but ", corpus.target.size(),
            " target sentences");
  Batch b;
  b.indices.assign(indices.begin(), indices.end());
  int64_t ts = 0, tt = 0;
  for (int64_t i : indices) {
    QKV_CHECK(i >= 0 && i < n, IndexError, "make_batch: index ", i, " outside the corpus [0, ", n,
              ")");
    b.src_lengths.push_back(detail::src_width(corpus, i, options));
    ts = std::max(ts, b.src_lengths.back());
    if (has_target) {
      b.tgt_lengths.push_back(detail::tgt_width(corpus, i));
      tt = std::max(tt, b.tgt_lengths.back());
    }
  }
  const auto rows = static_cast<int64_t>(indices.size());
  const double pad = options.pad_id;
  b.src = Tensor::full({rows, ts}, pad);
  if (has_target) {
    b.tgt_in = Tensor::full({rows, tt}, pad);
    b.tgt_out = Tensor::full({rows, tt}, pad);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const auto i = static_cast<size_t>(indices[static_cast<size_t>(r)]);
    fill_row(b.src.data<float>() + r * ts, corpus.source[i], -1,
             options.source_eos ? options.eos_id : -1);
    b.src_tokens += b.src_lengths[static_cast<size_t>(r)];
    if (!has_target) continue;
    fill_row(b.tgt_in.data<float>() + r * tt, corpus.target[i], options.bos_id, -1);
    fill_row(b.tgt_out.data<float>() + r * tt, corpus.target[i], -1, options.eos_id);
    b.tgt_tokens += b.tgt_lengths[static_cast<size_t>(r)];
  }
  return b;
}

std::vector<Batch> batches_in_order(const TokenizedCorpus& corpus, const BatchOptions& options) {
  detail::check_batch_options(options, /*training=*/false);
  std::vector<int64_t> order(corpus.source.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::vector<Batch> out;
  for (const auto& indices : detail::cut_by_budget(corpus, order, options))
    out.push_back(make_batch(corpus, indices, options));
  return out;
}

}  // namespace qkv::data
