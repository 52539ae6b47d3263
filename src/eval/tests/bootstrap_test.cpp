// Bootstrap intervals of corpus BLEU: they contain the corpus score, collapse when every
// segment is alike, narrow like 1/sqrt(N) with more segments, repeat for a seed, and
// per-length buckets carry them.
#include "qkv/eval/bootstrap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/rng.h"
#include "qkv/eval/by_length.h"

namespace qkv::eval {
namespace {

using Streams = std::vector<std::vector<std::string>>;

// A corpus whose segments vary in quality: hypothesis i shares a prefix of the reference
// whose length depends on i, then diverges.
struct Corpus {
  std::vector<std::string> hyps;
  Streams refs{1};
};

Corpus varied_corpus(size_t n, uint64_t seed = 7) {
  Rng rng(seed);
  Corpus c;
  const char* words[] = {"a", "man", "rides", "the", "red", "bike", "down", "hill", "fast", "now"};
  for (size_t i = 0; i < n; ++i) {
    std::string ref, hyp;
    const uint64_t keep = rng.uniform_int(10);
    for (uint64_t w = 0; w < 10; ++w) {
      const std::string word = words[(w + i) % 10];
      ref += (w ? " " : "") + word;
      hyp += (w ? " " : "") + (w < keep ? word : std::string("x") + std::to_string(w));
    }
    c.hyps.push_back(hyp);
    c.refs[0].push_back(ref);
  }
  return c;
}

TEST(Bootstrap, IntervalContainsTheCorpusScore) {
  const Corpus c = varied_corpus(200);
  const double bleu = corpus_bleu(c.hyps, c.refs).score;
  const ConfidenceInterval ci = bootstrap_bleu(c.hyps, c.refs);
  EXPECT_LT(ci.low, bleu);
  EXPECT_GT(ci.high, bleu);
  EXPECT_GT(ci.high - ci.low, 0.5);  // 200 segments of very different quality
  EXPECT_DOUBLE_EQ(ci.confidence, 0.95);
}

TEST(Bootstrap, IdenticalSegmentsGiveAPointInterval) {
  // Every resample is the same multiset, so every resampled score is the corpus score.
  const std::vector<std::string> hyps(50, "the cat sat on a mat today");
  const Streams refs = {std::vector<std::string>(50, "the cat sat on the mat today")};
  const double bleu = corpus_bleu(hyps, refs).score;
  const ConfidenceInterval ci = bootstrap_bleu(hyps, refs);
  EXPECT_DOUBLE_EQ(ci.low, bleu);
  EXPECT_DOUBLE_EQ(ci.high, bleu);
}

TEST(Bootstrap, NarrowsAsOneOverSqrtOfTheSegments) {
  // Four copies of the corpus: the same score, a standard error half as large.
  const Corpus c = varied_corpus(100);
  Corpus four;
  four.refs[0].clear();
  for (int k = 0; k < 4; ++k) {
    four.hyps.insert(four.hyps.end(), c.hyps.begin(), c.hyps.end());
    four.refs[0].insert(four.refs[0].end(), c.refs[0].begin(), c.refs[0].end());
  }
  const BootstrapOptions options{.samples = 2000};
  const ConfidenceInterval one = bootstrap_bleu(c.hyps, c.refs, {}, options);
  const ConfidenceInterval quad = bootstrap_bleu(four.hyps, four.refs, {}, options);
  const double ratio = (quad.high - quad.low) / (one.high - one.low);
  EXPECT_NEAR(ratio, 0.5, 0.1);
}

TEST(Bootstrap, SameSeedSameIntervalOtherSeedOther) {
  const Corpus c = varied_corpus(80);
  const ConfidenceInterval a = bootstrap_bleu(c.hyps, c.refs, {}, {.seed = 1});
  EXPECT_EQ(a, bootstrap_bleu(c.hyps, c.refs, {}, {.seed = 1}));
  EXPECT_NE(a, bootstrap_bleu(c.hyps, c.refs, {}, {.seed = 2}));
}

TEST(Bootstrap, WiderConfidenceWiderInterval) {
  const Corpus c = varied_corpus(120);
  const ConfidenceInterval c80 = bootstrap_bleu(c.hyps, c.refs, {}, {.confidence = 0.8});
  const ConfidenceInterval c99 = bootstrap_bleu(c.hyps, c.refs, {}, {.confidence = 0.99});
  EXPECT_LT(c99.low, c80.low);
  EXPECT_GT(c99.high, c80.high);
}

TEST(Bootstrap, PercentileRanksFromSegmentStatistics) {
  // Two segments, one perfect (BLEU 100) and one with no match (BLEU 0): a resample
  // holds 0, 1 or 2 copies of the perfect one. With one sample the interval is that
  // one score; the statistics path equals the text path.
  const std::vector<std::string> hyps = {"a b c d e", "v w x y z"};
  const Streams refs = {{"a b c d e", "f g h i j"}};
  const std::vector<BleuStats> stats = segment_bleu_stats(hyps, refs);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].matches, (std::vector<int64_t>{5, 4, 3, 2}));
  EXPECT_EQ(stats[1].matches, (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(stats[1].totals, (std::vector<int64_t>{5, 4, 3, 2}));
  const ConfidenceInterval one = bootstrap_bleu(stats, {}, {.samples = 1, .seed = 3});
  EXPECT_EQ(one.low, one.high);
  EXPECT_EQ(bootstrap_bleu(stats, {}, {.seed = 9}), bootstrap_bleu(hyps, refs, {}, {.seed = 9}));
  // 1000 draws: both extremes occur (probability 1/4 each), so the 95% interval spans them.
  const ConfidenceInterval wide = bootstrap_bleu(stats);
  EXPECT_DOUBLE_EQ(wide.low, 0.0);
  EXPECT_DOUBLE_EQ(wide.high, 100.0);
}

TEST(Bootstrap, BadInputIsAValueError) {
  const Corpus c = varied_corpus(10);
  EXPECT_THROW(bootstrap_bleu(c.hyps, c.refs, {}, {.samples = 0}), ValueError);
  EXPECT_THROW(bootstrap_bleu(c.hyps, c.refs, {}, {.confidence = 1.0}), ValueError);
  EXPECT_THROW(bootstrap_bleu(c.hyps, c.refs, {}, {.confidence = std::nan("")}), ValueError);
  EXPECT_THROW(bootstrap_bleu(std::span<const BleuStats>{}), ValueError);
  const std::vector<std::string> none;
  EXPECT_THROW(bootstrap_bleu(none, c.refs), ValueError);
  std::vector<BleuStats> three = segment_bleu_stats(c.hyps, c.refs, {.max_order = 3});
  EXPECT_THROW(bootstrap_bleu(three), ValueError);  // 3 orders for the default max_order 4
}

TEST(Bootstrap, ByLengthBucketsCarryIntervalsWhenAsked) {
  Corpus c = varied_corpus(60);
  std::string long_source = "w";
  for (int w = 1; w < 60; ++w) long_source += " w";
  std::vector<std::string> sources;
  for (size_t i = 0; i < c.hyps.size(); ++i)
    sources.push_back(i < 40 ? "short source" : long_source);
  // No interval unless asked for.
  for (const LengthBucket& b : score_by_length(sources, c.hyps, c.refs))
    EXPECT_FALSE(b.bleu_ci.has_value());
  const std::vector<LengthBucket> b =
      score_by_length(sources, c.hyps, c.refs, {.bootstrap = BootstrapOptions{}});
  ASSERT_TRUE(b[0].bleu_ci.has_value());
  EXPECT_FALSE(b[1].bleu_ci.has_value());  // empty bucket
  ASSERT_TRUE(b[5].bleu_ci.has_value());   // the 20 sentences of 60 words
  // Each bucket's interval is the bootstrap of just its sentences.
  const std::vector<std::string> first(c.hyps.begin(), c.hyps.begin() + 40);
  const Streams first_refs = {{c.refs[0].begin(), c.refs[0].begin() + 40}};
  EXPECT_EQ(*b[0].bleu_ci, bootstrap_bleu(first, first_refs));
  EXPECT_NE(format_by_length(b).find("95% CI"), std::string::npos);
  EXPECT_EQ(format_by_length(score_by_length(sources, c.hyps, c.refs)).find("CI"),
            std::string::npos);
  // Too few sentences for an interval: none, rather than a falsely narrow one.
  const std::vector<LengthBucket> few = score_by_length(
      sources, c.hyps, c.refs, {.bootstrap = BootstrapOptions{}, .bootstrap_min_sentences = 21});
  EXPECT_TRUE(few[0].bleu_ci.has_value());   // 40 sentences
  EXPECT_FALSE(few[5].bleu_ci.has_value());  // 20 sentences
  EXPECT_TRUE(few[5].bleu.has_value());
  EXPECT_THROW(
      score_by_length(sources, c.hyps, c.refs, {.bootstrap = BootstrapOptions{.samples = -1}}),
      ValueError);
}

}  // namespace
}  // namespace qkv::eval
