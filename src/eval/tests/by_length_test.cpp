// Per-length buckets: boundaries, empty buckets, and each bucket's scores equal to the
// corpus scores of just its sentences.
#include "qkv/eval/by_length.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "qkv/base/error.h"

namespace qkv::eval {
namespace {

using Streams = std::vector<std::vector<std::string>>;

std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " w" : "w");
  return s;
}

// test/test_bleu.py's _hyps and _refs (README example).
const std::vector<std::string> kHyps = {"The dog bit the man.", "It wasn't surprising.",
                                        "The man had just bitten him."};
const Streams kRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};

TEST(ByLength, SixBucketsWithLabelsAndBounds) {
  const std::vector<std::string> sources = {words(3), words(4), words(5)};
  const std::vector<LengthBucket> b = score_by_length(sources, kHyps, kRefs);
  ASSERT_EQ(b.size(), 6u);
  const char* labels[] = {"1-10", "11-20", "21-30", "31-40", "41-50", "50+"};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(b[i].label, labels[i]);
  EXPECT_EQ(b[1].min_words, 11);
  EXPECT_EQ(b[1].max_words, 20);
  EXPECT_EQ(b[5].min_words, 51);
  EXPECT_EQ(b[5].max_words, -1);
}

TEST(ByLength, OneBucketHoldingEverythingEqualsTheCorpusScores) {
  const std::vector<std::string> sources = {words(3), words(10), ""};
  const std::vector<LengthBucket> b = score_by_length(sources, kHyps, kRefs);
  EXPECT_EQ(b[0].count, 3);
  ASSERT_TRUE(b[0].bleu && b[0].chrf);
  EXPECT_NEAR(b[0].bleu->score, 48.530827, 1e-8);   // test_bleu.py, test_corpus_bleu_cases[0]
  EXPECT_EQ(b[0].chrf->format(), "chrF2 = 59.73");  // README.md, CHRF().corpus_score
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_EQ(b[i].count, 0) << b[i].label;
    EXPECT_FALSE(b[i].bleu.has_value()) << b[i].label;
    EXPECT_FALSE(b[i].chrf.has_value()) << b[i].label;
  }
}

TEST(ByLength, BoundariesAndEachBucketIsItsOwnCorpus) {
  // 10 -> 1-10, 11 -> 11-20, 51 -> 50+; 50 would be 41-50.
  const std::vector<std::string> sources = {words(10), words(11), words(51)};
  const std::vector<LengthBucket> b = score_by_length(sources, kHyps, kRefs);
  const int64_t counts[] = {1, 1, 0, 0, 0, 1};
  const size_t sentence_of[] = {0, 1, 0, 0, 0, 2};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(b[i].count, counts[i]) << b[i].label;
    if (!counts[i]) continue;
    const size_t s = sentence_of[i];
    const std::vector<std::string> hyp = {kHyps[s]};
    const Streams refs = {{kRefs[0][s]}, {kRefs[1][s]}};
    EXPECT_EQ(b[i].bleu->format(), corpus_bleu(hyp, refs).format()) << b[i].label;
    EXPECT_EQ(b[i].chrf->score, corpus_chrf(hyp, refs).score) << b[i].label;
  }
  EXPECT_EQ(source_words(words(50)), 50);
}

TEST(ByLength, SourceWordsSplitOnUnicodeWhitespace) {
  EXPECT_EQ(source_words("a\u00a0b\u3000c  d\t"), 4);
  EXPECT_EQ(source_words("   "), 0);
  EXPECT_THROW(source_words("a \xFF"), ValueError);
}

TEST(ByLength, FormatsATableWithDashesForEmptyBuckets) {
  const std::vector<std::string> sources = {words(3), words(4), words(5)};
  const std::string table = format_by_length(score_by_length(sources, kHyps, kRefs));
  EXPECT_EQ(table,
            "length  sentences   BLEU  chrF2\n"
            "1-10            3  48.53  59.73\n"
            "11-20           0      -      -\n"
            "21-30           0      -      -\n"
            "31-40           0      -      -\n"
            "41-50           0      -      -\n"
            "50+             0      -      -\n");
}

TEST(ByLength, MismatchedSourcesAndHypothesesNameBothCounts) {
  const std::vector<std::string> sources = {words(3), words(4)};
  try {
    score_by_length(sources, kHyps, kRefs);
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("2 source lines but 3 hypotheses"), std::string::npos)
        << e.what();
  }
}

TEST(ByLength, InvalidUtf8InASourceNamesTheLine) {
  const std::vector<std::string> sources = {words(3), "ok", "bad \xC3"};
  try {
    score_by_length(sources, kHyps, kRefs);
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("sources line 3 is not valid UTF-8"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qkv::eval
