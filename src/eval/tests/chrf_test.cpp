// chrF against sacreBLEU 2.x's published values: each expectation names the sacreBLEU file
// and case it comes from (github.com/mjpost/sacrebleu, test/test_chrf.py and README.md).
#include "qkv/eval/chrf.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qkv::eval {
namespace {

using Streams = std::vector<std::vector<std::string>>;

constexpr double kEpsilon = 1e-4;  // test_chrf.py's EPSILON

struct Case {
  std::vector<std::string> hyps, refs;
  double expected;
};

double chrf(const Case& c, const ChrfOptions& options) {
  return corpus_chrf(c.hyps, Streams{c.refs}, options).score;
}

TEST(CorpusChrf, EpsSmoothingBeta3) {
  // test_chrf.py, test_cases (corpus_chrf with char_order=6, word_order=0, beta=3,
  // eps_smoothing=True).
  const Case cases[] = {
      {{"abcdefg"}, {"hijklmnop"}, 0.0},
      {{"a"}, {"b"}, 0.0},
      {{""}, {"b"}, 0.0},
      {{""}, {"ref"}, 0.0},
      {{""}, {"reference"}, 0.0},
      {{"aa"}, {"ab"}, 8.3333},
      {{"a", "b"}, {"a", "c"}, 8.3333},
      {{"a"}, {"a"}, 16.6667},
      {{"a b c"}, {"a b c"}, 50.0},
      {{"a b c"}, {"abc"}, 50.0},
      {{" risk assessment must be made of those who are qualified and expertise in the sector - "
        "these are the scientists ."},
       {"risk assessment has to be undertaken by those who are qualified and expert in that area "
        "- that is the scientists ."},
       63.361730},
      {{" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "},
       {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
       64.1302698},
      {{"Niemand hat die Absicht, eine Mauer zu errichten"},
       {"Niemand hat die Absicht, eine Mauer zu errichten"},
       100.0},
  };
  for (const Case& c : cases)
    EXPECT_NEAR(chrf(c, {.beta = 3, .eps_smoothing = true}), c.expected, kEpsilon) << c.hyps[0];
}

TEST(CorpusChrf, EffectiveOrderBeta3) {
  // test_chrf.py, test_cases_effective_order (beta=3, eps_smoothing=False: 2.x's default).
  const Case cases[] = {
      {{"a"}, {"a"}, 100.0},       {{""}, {"reference"}, 0.0}, {{"a b c"}, {"a b c"}, 100.0},
      {{"a b c"}, {"abc"}, 100.0}, {{""}, {"c"}, 0.0},         {{"a", "b"}, {"a", "c"}, 50.0},
      {{"aa"}, {"ab"}, 25.0},
  };
  for (const Case& c : cases) EXPECT_NEAR(chrf(c, {.beta = 3}), c.expected, kEpsilon) << c.hyps[0];
}

TEST(CorpusChrf, KeepWhitespace) {
  // test_chrf.py, test_cases_keep_whitespace (beta=3, remove_whitespace=False).
  const Case cases[] = {
      {{"Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."},
       {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
       67.3481606},
      {{"risk assessment must be made of those who are qualified and expertise in the sector - "
        "these are the scientists ."},
       {"risk assessment has to be undertaken by those who are qualified and expert in that area "
        "- that is the scientists ."},
       65.2414427},
  };
  for (const Case& c : cases)
    EXPECT_NEAR(chrf(c, {.beta = 3, .whitespace = true}), c.expected, kEpsilon) << c.hyps[0];
  EXPECT_EQ(chrf_signature({.beta = 3, .whitespace = true}, 1),
            "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:yes|version:qkv-0.1.0");
}

TEST(SentenceChrf, EpsSmoothingOnCzechSentences) {
  // test_chrf.py, test_sentence_level_chrf (sentence_chrf(..., eps_smoothing=True), beta 2).
  const Case cases[] = {
      {{"Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře."},
       {"Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře."},
       39.14078509},
      {{"Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři."},
       {"A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři."},
       31.22557079},
      {{"Lapali po dechu, jejich životy skončily dřív, než skutečně začaly."},
       {"Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli."},
       57.15704367},
  };
  for (const Case& c : cases)
    EXPECT_NEAR(sentence_chrf(c.hyps[0], c.refs, {.eps_smoothing = true}).score, c.expected,
                kEpsilon)
        << c.hyps[0];
}

TEST(CorpusChrf, DefaultsWithTwoReferences) {
  // README.md, "Using SacreBLEU from Python": CHRF().corpus_score(sys, refs) -> chrF2 = 59.73
  // and the signature of "Using multiple metrics" (nrefs:2 in "Multi-reference Evaluation").
  const std::vector<std::string> hyps = {"The dog bit the man.", "It wasn't surprising.",
                                         "The man had just bitten him."};
  const Streams refs = {
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};
  const ChrfScore s = corpus_chrf(hyps, refs);
  EXPECT_EQ(s.format(), "chrF2 = 59.73");
  EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:qkv-0.1.0");
  EXPECT_EQ(s.format(1, true),
            "chrF2|nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:qkv-0.1.0 = 59.7");
}

TEST(CorpusChrf, CodePointsNotBytesAndUnicodeWhitespaceRemoved) {
  // "é" is one character: hypothesis and reference share every n-gram (100), while a
  // byte-level count would see different n-grams. NBSP and U+3000 are removed like ' '.
  const Streams refs = {{"café au lait"}};
  EXPECT_NEAR(corpus_chrf(std::vector<std::string>{"café\u00a0au\u3000lait"}, refs).score, 100.0,
              1e-12);
  // One substituted character out of 4 (order 1: 3/4 matched; order 4: none).
  const double one_off = sentence_chrf("cafe", std::vector<std::string>{"café"}).score;
  EXPECT_NEAR(one_off, sentence_chrf("cafx", std::vector<std::string>{"cafy"}).score, 1e-12);
}

TEST(CorpusChrf, BestReferencePerSegment) {
  // With several references a segment takes the one with the best F-score: adding a
  // worse second reference changes nothing, and the order of references does not matter.
  const std::vector<std::string> hyps = {"the cat sat"};
  const double alone = corpus_chrf(hyps, Streams{{"the cat sat"}}).score;
  EXPECT_EQ(alone, 100.0);
  EXPECT_EQ(corpus_chrf(hyps, Streams{{"a dog ran"}, {"the cat sat"}}).score, alone);
  EXPECT_EQ(corpus_chrf(hyps, Streams{{"the cat sat"}, {"a dog ran"}}).score, alone);
}

}  // namespace
}  // namespace qkv::eval
