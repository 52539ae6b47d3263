#include "qkv/eval/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "detail/corpus.h"
#include "detail/text.h"
#include "detail/tokenize.h"
#include "qkv/base/error.h"

namespace qkv::eval {
namespace {

// n-gram -> count, for one order. Keys view the owning Segment's text: an n-gram is the
// substring from its first token to its last, tokens being joined by single spaces.
using NgramCounts = std::unordered_map<std::string_view, int64_t>;

// One tokenized segment: tokens joined by single ASCII spaces (no token holds one).
struct Segment {
  std::string text;
  std::vector<size_t> starts, ends;  // [tokens] byte range of each token in text
};

Segment tokenize_segment(std::string_view line, BleuTokenizer tokenizer) {
  // sacreBLEU's BLEU._preprocess_segment: rstrip, then tokenize.
  const std::string_view stripped = detail::rstrip_whitespace(line);
  Segment seg;
  seg.text = tokenizer == BleuTokenizer::Mteval13a ? detail::tokenize_13a_unchecked(stripped)
                                                   : detail::normalize_whitespace(stripped);
  size_t start = 0;
  for (size_t i = 0; i <= seg.text.size(); ++i) {
    if (i == seg.text.size() || seg.text[i] == ' ') {
      if (i > start) {
        seg.starts.push_back(start);
        seg.ends.push_back(i);
      }
      start = i + 1;
    }
  }
  return seg;
}

// [max_order] counts of the segment's n-grams of order 1..max_order.
std::vector<NgramCounts> count_ngrams(const Segment& seg, int max_order) {
  std::vector<NgramCounts> counts(static_cast<size_t>(max_order));
  const size_t tokens = seg.starts.size();
  for (size_t n = 1; n <= size_t(max_order) && n <= tokens; ++n)
    for (size_t i = 0; i + n <= tokens; ++i) {
      const size_t begin = seg.starts[i], end = seg.ends[i + n - 1];
      ++counts[n - 1][std::string_view(seg.text).substr(begin, end - begin)];
    }
  return counts;
}

// sacreBLEU's BLEU._get_closest_ref_len: the closest length, the shorter on a tie.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best_diff = -1, best_len = -1;
  for (int64_t len : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - len);
    if (best_diff == -1 || diff < best_diff || (diff == best_diff && len < best_len)) {
      best_diff = diff;
      best_len = len;
    }
  }
  return best_len;
}

// One segment's statistics against its references: each n-gram's matches are clipped by
// its largest count in any single reference.
BleuStats segment_stats(std::string_view hypothesis, const std::vector<std::string_view>& refs,
                        const BleuOptions& options) {
  const int max_order = options.max_order;
  std::vector<Segment> ref_segments;  // owns the text the reference n-grams view
  ref_segments.reserve(refs.size());
  std::vector<NgramCounts> ref_max(static_cast<size_t>(max_order));
  std::vector<int64_t> ref_lens;
  for (std::string_view ref : refs) {
    ref_segments.push_back(tokenize_segment(ref, options.tokenizer));
    ref_lens.push_back(int64_t(ref_segments.back().starts.size()));
    std::vector<NgramCounts> counts = count_ngrams(ref_segments.back(), max_order);
    for (size_t n = 0; n < counts.size(); ++n)
      for (const auto& [ngram, count] : counts[n]) {
        int64_t& best = ref_max[n][ngram];
        best = std::max(best, count);
      }
  }

  const Segment hyp = tokenize_segment(hypothesis, options.tokenizer);
  BleuStats stats;
  stats.hyp_len = int64_t(hyp.starts.size());
  stats.ref_len = closest_ref_len(stats.hyp_len, ref_lens);
  stats.matches.assign(size_t(max_order), 0);
  stats.totals.assign(size_t(max_order), 0);
  const std::vector<NgramCounts> hyp_counts = count_ngrams(hyp, max_order);
  for (size_t n = 0; n < hyp_counts.size(); ++n)
    for (const auto& [ngram, count] : hyp_counts[n]) {
      stats.totals[n] += count;
      const auto it = ref_max[n].find(ngram);
      if (it != ref_max[n].end()) stats.matches[n] += std::min(count, it->second);
    }
  return stats;
}

void check_options(const BleuOptions& options, std::string_view who) {
  QKV_CHECK(options.max_order >= 1, ValueError, who, ": max_order must be >= 1, got ",
            options.max_order);
  if (options.smooth_value)
    QKV_CHECK(std::isfinite(*options.smooth_value) && *options.smooth_value >= 0, ValueError, who,
              ": smooth_value must be finite and >= 0, got ", *options.smooth_value);
  // Floor smoothing counts an order with no match as smooth_value matches; above 1 such an
  // order would score better than one whose every n-gram matched (and BLEU above 100).
  if (options.smooth_value && options.smoothing == BleuSmoothing::Floor)
    QKV_CHECK(*options.smooth_value <= 1.0, ValueError, who,
              ": smooth_value for floor smoothing is the matches a zero-match order counts as "
              "and must be at most 1, got ",
              *options.smooth_value);
}

double default_smooth_value(BleuSmoothing smoothing) {
  return smoothing == BleuSmoothing::Floor ? 0.1 : smoothing == BleuSmoothing::AddK ? 1.0 : 0.0;
}

// sacrebleu.utils.my_log: log with log(0) floored to a large negative number, so that a
// zero precision drives the geometric mean to 0 instead of NaN.
double floored_log(double x) {
  return x == 0.0 ? -9999999999.0 : std::log(x);
}

BleuScore score_corpus(std::string_view who, std::span<const std::string> hypotheses,
                       std::span<const std::vector<std::string>> references,
                       const BleuOptions& options) {
  check_options(options, who);
  const detail::Corpus corpus = detail::gather_corpus(who, hypotheses, references);
  BleuStats total;
  total.matches.assign(size_t(options.max_order), 0);
  total.totals.assign(size_t(options.max_order), 0);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const BleuStats seg = segment_stats(hypotheses[i], corpus.references[i], options);
    total.hyp_len += seg.hyp_len;
    total.ref_len += seg.ref_len;
    for (size_t n = 0; n < seg.matches.size(); ++n) {
      total.matches[n] += seg.matches[n];
      total.totals[n] += seg.totals[n];
    }
  }
  return compute_bleu(total, options, corpus.nrefs);
}

}  // namespace

BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      const BleuOptions& options) {
  return score_corpus("corpus_bleu", hypotheses, references, options);
}

std::vector<BleuStats> segment_bleu_stats(std::span<const std::string> hypotheses,
                                          std::span<const std::vector<std::string>> references,
                                          const BleuOptions& options) {
  check_options(options, "segment_bleu_stats");
  const detail::Corpus corpus = detail::gather_corpus("segment_bleu_stats", hypotheses, references);
  std::vector<BleuStats> out;
  out.reserve(hypotheses.size());
  for (size_t i = 0; i < hypotheses.size(); ++i)
    out.push_back(segment_stats(hypotheses[i], corpus.references[i], options));
  return out;
}

BleuScore sentence_bleu(std::string_view hypothesis, std::span<const std::string> references,
                        const BleuOptions& options) {
  const std::string hyp[] = {std::string(hypothesis)};
  return score_corpus("sentence_bleu", hyp, detail::sentence_streams(references), options);
}

// sacreBLEU's BLEU.compute_bleu, step for step (including the order of floating-point
// operations, so scores agree to the last bit where libm's exp/log do).
BleuScore compute_bleu(const BleuStats& stats, const BleuOptions& options, int nrefs) {
  check_options(options, "compute_bleu");
  const size_t orders = size_t(options.max_order);
  QKV_CHECK(stats.matches.size() == orders && stats.totals.size() == orders, ValueError,
            "compute_bleu: statistics have ", stats.matches.size(), " match and ",
            stats.totals.size(), " total counts; max_order is ", orders);
  BleuScore s;
  s.counts = stats.matches;
  s.totals = stats.totals;
  s.hyp_len = stats.hyp_len;
  s.ref_len = stats.ref_len;
  s.ratio = stats.ref_len ? double(stats.hyp_len) / double(stats.ref_len) : 0.0;
  s.signature = bleu_signature(options, nrefs);
  if (stats.hyp_len < stats.ref_len)
    s.bp = stats.hyp_len > 0 ? std::exp(1.0 - double(stats.ref_len) / double(stats.hyp_len)) : 0.0;
  else
    s.bp = 1.0;
  s.precisions.assign(orders, 0.0);

  // No match of any order: 0, before any smoothing (sacreBLEU issue #141).
  if (std::all_of(stats.matches.begin(), stats.matches.end(), [](int64_t m) { return m == 0; }))
    return s;

  const double smooth_value =
      options.smooth_value.value_or(default_smooth_value(options.smoothing));
  double smooth_mteval = 1.0;
  size_t eff_order = orders;
  for (size_t n = 1; n <= orders; ++n) {
    double correct = double(stats.matches[n - 1]), total = double(stats.totals[n - 1]);
    if (options.smoothing == BleuSmoothing::AddK && n > 1) {
      correct += smooth_value;
      total += smooth_value;
    }
    if (total == 0) break;
    if (options.effective_order) eff_order = n;
    double& precision = s.precisions[n - 1];
    if (correct == 0) {
      if (options.smoothing == BleuSmoothing::Exp) {
        smooth_mteval *= 2;
        precision = 100.0 / (smooth_mteval * total);
      } else if (options.smoothing == BleuSmoothing::Floor) {
        precision = 100.0 * smooth_value / total;
      }
    } else {
      precision = 100.0 * correct / total;
    }
  }
  double log_sum = 0.0;
  for (size_t n = 0; n < eff_order; ++n) log_sum += floored_log(s.precisions[n]);
  s.score = s.bp * std::exp(log_sum / double(eff_order));
  return s;
}

std::string bleu_signature(const BleuOptions& options, int nrefs) {
  std::string smooth;
  switch (options.smoothing) {
    case BleuSmoothing::None:
      smooth = "none";
      break;
    case BleuSmoothing::Exp:
      smooth = "exp";
      break;
    case BleuSmoothing::Floor:
    case BleuSmoothing::AddK:
      smooth =
          (options.smoothing == BleuSmoothing::Floor ? "floor[" : "add-k[") +
          detail::fixed(options.smooth_value.value_or(default_smooth_value(options.smoothing)), 2) +
          "]";
      break;
  }
  return "nrefs:" + detail::nrefs_text(nrefs) +
         "|case:mixed|eff:" + (options.effective_order ? "yes" : "no") +
         "|tok:" + (options.tokenizer == BleuTokenizer::Mteval13a ? "13a" : "none") +
         "|smooth:" + smooth + "|version:" + detail::version_text();
}

std::string BleuScore::format(int width, bool with_signature) const {
  std::string out = with_signature ? "BLEU|" + signature : "BLEU";
  out += " = " + detail::fixed(score, width) + " ";
  for (size_t n = 0; n < precisions.size(); ++n) {
    if (n) out += '/';
    out += detail::fixed(precisions[n], 1);
  }
  out += " (BP = " + detail::fixed(bp, 3) + " ratio = " + detail::fixed(ratio, 3) +
         " hyp_len = " + std::to_string(hyp_len) + " ref_len = " + std::to_string(ref_len) + ")";
  return out;
}

}  // namespace qkv::eval
