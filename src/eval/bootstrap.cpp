#include "qkv/eval/bootstrap.h"

#include <algorithm>
#include <cmath>

#include "qkv/base/error.h"
#include "qkv/base/rng.h"

namespace qkv::eval {

void validate(const BootstrapOptions& options) {
  QKV_CHECK(options.samples >= 1 && options.samples <= 1000000, ValueError,
            "bootstrap: samples must be in [1, 1000000], got ", options.samples);
  QKV_CHECK(std::isfinite(options.confidence) && options.confidence > 0 && options.confidence < 1,
            ValueError, "bootstrap: confidence must be in (0, 1), got ", options.confidence);
}

ConfidenceInterval bootstrap_bleu(std::span<const BleuStats> segments, const BleuOptions& bleu,
                                  const BootstrapOptions& options) {
  validate(options);
  QKV_CHECK(!segments.empty(), ValueError, "bootstrap_bleu: no segments to resample");
  const auto orders = size_t(bleu.max_order);
  for (const BleuStats& s : segments)
    QKV_CHECK(s.matches.size() == orders && s.totals.size() == orders, ValueError,
              "bootstrap_bleu: segment statistics of ", s.matches.size(), " orders for max_order ",
              bleu.max_order);
  Rng rng(options.seed);
  const uint64_t n = segments.size();
  std::vector<double> scores;
  scores.reserve(size_t(options.samples));
  BleuStats sum;
  for (int64_t k = 0; k < options.samples; ++k) {
    sum.hyp_len = sum.ref_len = 0;
    sum.matches.assign(orders, 0);
    sum.totals.assign(orders, 0);
    for (uint64_t i = 0; i < n; ++i) {
      const BleuStats& s = segments[size_t(rng.uniform_int(n))];
      sum.hyp_len += s.hyp_len;
      sum.ref_len += s.ref_len;
      for (size_t o = 0; o < orders; ++o) {
        sum.matches[o] += s.matches[o];
        sum.totals[o] += s.totals[o];
      }
    }
    scores.push_back(compute_bleu(sum, bleu).score);
  }
  std::sort(scores.begin(), scores.end());
  const double tail = (1.0 - options.confidence) / 2.0;
  const double count = double(scores.size());
  const auto low = size_t(std::floor(tail * count));
  const auto high = size_t(std::max(0.0, std::ceil((1.0 - tail) * count) - 1.0));
  return {.low = scores[std::min(low, scores.size() - 1)],
          .high = scores[std::min(high, scores.size() - 1)],
          .confidence = options.confidence};
}

ConfidenceInterval bootstrap_bleu(std::span<const std::string> hypotheses,
                                  std::span<const std::vector<std::string>> references,
                                  const BleuOptions& bleu, const BootstrapOptions& options) {
  validate(options);
  const std::vector<BleuStats> segments = segment_bleu_stats(hypotheses, references, bleu);
  return bootstrap_bleu(segments, bleu, options);
}

}  // namespace qkv::eval
