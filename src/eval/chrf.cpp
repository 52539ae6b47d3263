#include "qkv/eval/chrf.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "detail/corpus.h"
#include "detail/text.h"
#include "qkv/base/error.h"

namespace qkv::eval {
namespace {

// [char_order] character n-gram counts of one line; n-grams are runs of n code points,
// kept as their UTF-8 bytes (equal bytes <=> equal code points).
using CharNgrams = std::vector<std::unordered_map<std::string, int64_t>>;

// sacrebleu.metrics.helpers.extract_all_char_ngrams.
CharNgrams char_ngrams(std::string_view line, const ChrfOptions& options) {
  const std::string text = options.whitespace ? std::string(line) : [&] {
    std::string joined;  // "".join(line.split())
    for (std::string_view word : detail::split_whitespace(line)) joined += word;
    return joined;
  }();
  std::vector<size_t> starts;  // [code points + 1] byte offset of each code point, then the end
  for (size_t i = 0; i < text.size(); i += detail::code_point_length(uint8_t(text[i])))
    starts.push_back(i);
  const size_t length = starts.size();
  starts.push_back(text.size());

  CharNgrams ngrams(size_t(options.char_order));
  for (size_t n = 1; n <= size_t(options.char_order) && n <= length; ++n)
    for (size_t i = 0; i + n <= length; ++i)
      ++ngrams[n - 1][text.substr(starts[i], starts[i + n] - starts[i])];
  return ngrams;
}

int64_t total(const std::unordered_map<std::string, int64_t>& counts) {
  int64_t sum = 0;
  for (const auto& [ngram, count] : counts) sum += count;
  return sum;
}

// [3 * char_order] (hypothesis n-grams, reference n-grams, matches) per order: sacreBLEU's
// CHRF._get_match_statistics, where hypothesis n-grams count only if the reference has
// n-grams of that order.
std::vector<int64_t> match_stats(const CharNgrams& hyp, const CharNgrams& ref) {
  std::vector<int64_t> stats;
  stats.reserve(3 * hyp.size());
  for (size_t n = 0; n < hyp.size(); ++n) {
    int64_t hyp_count = 0, matches = 0;
    for (const auto& [ngram, count] : hyp[n]) {
      hyp_count += count;
      const auto it = ref[n].find(ngram);
      if (it != ref[n].end()) matches += std::min(count, it->second);
    }
    stats.push_back(ref[n].empty() ? 0 : hyp_count);
    stats.push_back(total(ref[n]));
    stats.push_back(matches);
  }
  return stats;
}

// sacreBLEU's CHRF._compute_f_score, in the same order of floating-point operations.
double f_score(const std::vector<int64_t>& stats, const ChrfOptions& options) {
  const double eps = 1e-16;
  const double factor = double(options.beta) * double(options.beta);
  double eps_score = 0.0, avg_prec = 0.0, avg_rec = 0.0;
  int effective_order = 0;
  const size_t orders = stats.size() / 3;
  for (size_t i = 0; i < orders; ++i) {
    const int64_t n_hyp = stats[3 * i], n_ref = stats[3 * i + 1], n_match = stats[3 * i + 2];
    const double prec = n_hyp > 0 ? double(n_match) / double(n_hyp) : eps;
    const double rec = n_ref > 0 ? double(n_match) / double(n_ref) : eps;
    const double denom = factor * prec + rec;
    eps_score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (options.eps_smoothing) return 100 * eps_score / double(orders);
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0) return 0.0;
  double score = (1 + factor) * avg_prec * avg_rec;
  score /= (factor * avg_prec) + avg_rec;
  return 100 * score;
}

void check_options(const ChrfOptions& options, std::string_view who) {
  QKV_CHECK(options.char_order >= 1, ValueError, who, ": char_order must be >= 1, got ",
            options.char_order);
  QKV_CHECK(options.beta >= 0, ValueError, who, ": beta must be >= 0, got ", options.beta);
}

ChrfScore score_corpus(std::string_view who, std::span<const std::string> hypotheses,
                       std::span<const std::vector<std::string>> references,
                       const ChrfOptions& options) {
  check_options(options, who);
  const detail::Corpus corpus = detail::gather_corpus(who, hypotheses, references);
  std::vector<int64_t> sums(3 * size_t(options.char_order), 0);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const CharNgrams hyp = char_ngrams(hypotheses[i], options);
    std::vector<int64_t> best;
    double best_f = -1.0;
    for (std::string_view ref : corpus.references[i]) {
      std::vector<int64_t> stats = match_stats(hyp, char_ngrams(ref, options));
      const double f = f_score(stats, options);
      if (f > best_f) {
        best_f = f;
        best = std::move(stats);
      }
    }
    for (size_t k = 0; k < sums.size(); ++k) sums[k] += best[k];
  }
  ChrfScore score;
  score.score = f_score(sums, options);
  score.beta = options.beta;
  score.signature = chrf_signature(options, corpus.nrefs);
  return score;
}

}  // namespace

ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      const ChrfOptions& options) {
  return score_corpus("corpus_chrf", hypotheses, references, options);
}

ChrfScore sentence_chrf(std::string_view hypothesis, std::span<const std::string> references,
                        const ChrfOptions& options) {
  const std::string hyp[] = {std::string(hypothesis)};
  return score_corpus("sentence_chrf", hyp, detail::sentence_streams(references), options);
}

std::string chrf_signature(const ChrfOptions& options, int nrefs) {
  return "nrefs:" + detail::nrefs_text(nrefs) +
         "|case:mixed|eff:" + (options.eps_smoothing ? "no" : "yes") +
         "|nc:" + std::to_string(options.char_order) +
         "|nw:0|space:" + (options.whitespace ? "yes" : "no") +
         "|version:" + detail::version_text();
}

std::string ChrfScore::format(int width, bool with_signature) const {
  const std::string name = "chrF" + std::to_string(beta);
  return (with_signature ? name + "|" + signature : name) + " = " + detail::fixed(score, width);
}

}  // namespace qkv::eval
