#include "qkv/eval/by_length.h"

#include <algorithm>
#include <cstdio>

#include "detail/corpus.h"
#include "detail/text.h"
#include "qkv/base/error.h"

namespace qkv::eval {
namespace {

constexpr int64_t kBucketWidth = 10;
constexpr size_t kBuckets = 6;  // 1-10, ..., 41-50, 50+

size_t bucket_of(int64_t words) {
  if (words <= kBucketWidth) return 0;  // 0 words too: an empty source is a short one
  return std::min(size_t((words - 1) / kBucketWidth), kBuckets - 1);
}

std::vector<LengthBucket> empty_buckets() {
  std::vector<LengthBucket> buckets(kBuckets);
  for (size_t b = 0; b < kBuckets; ++b) {
    LengthBucket& bucket = buckets[b];
    bucket.min_words = int64_t(b) * kBucketWidth + 1;
    if (b + 1 < kBuckets) {
      bucket.max_words = int64_t(b + 1) * kBucketWidth;
      bucket.label = std::to_string(bucket.min_words) + "-" + std::to_string(bucket.max_words);
    } else {
      bucket.label = std::to_string(bucket.min_words - 1) + "+";
    }
  }
  buckets[0].min_words = 0;
  return buckets;
}

}  // namespace

int64_t source_words(std::string_view line) {
  detail::check_utf8(line, "source_words: the line");
  return int64_t(detail::split_whitespace(line).size());
}

std::vector<LengthBucket> score_by_length(std::span<const std::string> sources,
                                          std::span<const std::string> hypotheses,
                                          std::span<const std::vector<std::string>> references,
                                          const ByLengthOptions& options) {
  QKV_CHECK(sources.size() == hypotheses.size(), ValueError, "score_by_length: ", sources.size(),
            " source lines but ", hypotheses.size(),
            " hypotheses; pass one hypothesis per source line");
  detail::gather_corpus("score_by_length", hypotheses, references);  // whole-corpus errors first
  if (options.bootstrap) validate(*options.bootstrap);

  std::vector<std::vector<size_t>> members(kBuckets);  // [bucket] sentence indices
  for (size_t i = 0; i < sources.size(); ++i) {
    detail::check_utf8(sources[i], qkv::detail::concat("score_by_length: sources line ", i + 1));
    members[bucket_of(int64_t(detail::split_whitespace(sources[i]).size()))].push_back(i);
  }

  std::vector<LengthBucket> buckets = empty_buckets();
  for (size_t b = 0; b < kBuckets; ++b) {
    buckets[b].count = int64_t(members[b].size());
    if (members[b].empty()) continue;
    std::vector<std::string> hyps;
    std::vector<std::vector<std::string>> refs(references.size());
    for (size_t i : members[b]) {
      hyps.push_back(hypotheses[i]);
      for (size_t k = 0; k < references.size(); ++k) refs[k].push_back(references[k][i]);
    }
    buckets[b].bleu = corpus_bleu(hyps, refs, options.bleu);
    buckets[b].chrf = corpus_chrf(hyps, refs, options.chrf);
    if (options.bootstrap && buckets[b].count >= options.bootstrap_min_sentences)
      buckets[b].bleu_ci = bootstrap_bleu(hyps, refs, options.bleu, *options.bootstrap);
  }
  return buckets;
}

std::string format_by_length(std::span<const LengthBucket> buckets) {
  std::string chrf_name = "chrF";
  for (const LengthBucket& bucket : buckets)
    if (bucket.chrf) {
      chrf_name += std::to_string(bucket.chrf->beta);
      break;
    }
  std::string ci_name;  // "95% CI" from the first bucket with an interval
  for (const LengthBucket& bucket : buckets)
    if (bucket.bleu_ci) {
      ci_name = detail::fixed(bucket.bleu_ci->confidence * 100, 0) + "% CI";
      break;
    }
  const bool with_ci = !ci_name.empty();
  const auto row = [with_ci](std::string_view a, std::string_view b, std::string_view c,
                             std::string_view d, std::string_view e) {
    char line[160];
    std::snprintf(line, sizeof line, "%-7.*s %9.*s %6.*s %6.*s", int(a.size()), a.data(),
                  int(b.size()), b.data(), int(c.size()), c.data(), int(d.size()), d.data());
    std::string out = line;
    if (with_ci) {
      std::snprintf(line, sizeof line, " %13.*s", int(e.size()), e.data());
      out += line;
    }
    return out + "\n";
  };
  std::string out = row("length", "sentences", "BLEU", chrf_name, ci_name);
  for (const LengthBucket& bucket : buckets)
    out += row(bucket.label, std::to_string(bucket.count),
               bucket.bleu ? detail::fixed(bucket.bleu->score, 2) : "-",
               bucket.chrf ? detail::fixed(bucket.chrf->score, 2) : "-",
               bucket.bleu_ci ? detail::fixed(bucket.bleu_ci->low, 2) + "-" +
                                    detail::fixed(bucket.bleu_ci->high, 2)
                              : "-");
  return out;
}

}  // namespace qkv::eval
