// BLEU against sacreBLEU 2.x's published values: each expectation names the sacreBLEU
// file and case it comes from (github.com/mjpost/sacrebleu, test/ and README.md).
#include "qkv/eval/bleu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace qkv::eval {
namespace {

using Streams = std::vector<std::vector<std::string>>;

// test/test_bleu.py: _hyps and _refs (also the README's API example).
const std::vector<std::string> kHyps = {"The dog bit the man.", "It wasn't surprising.",
                                        "The man had just bitten him."};
const Streams kRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};

// sacrebleu.raw_corpus_bleu: no tokenization, floor smoothing, effective order.
BleuOptions raw_options(double floor) {
  return {.tokenizer = BleuTokenizer::None,
          .smoothing = BleuSmoothing::Floor,
          .smooth_value = floor,
          .effective_order = true};
}

constexpr double kEpsilon = 1e-8;  // test_bleu.py's EPSILON

TEST(CorpusBleu, DefaultSettings) {
  // test_bleu.py, test_corpus_bleu_cases[0]: (_hyps, _refs, {}, 48.530827).
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs).score, 48.530827, kEpsilon);
  // test_corpus_bleu_cases[3] ({'tokenize': '13a'}) and [5] ({'smooth_method': 'none'}).
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs, {.tokenizer = BleuTokenizer::Mteval13a}).score, 48.530827,
              kEpsilon);
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs, {.smoothing = BleuSmoothing::None}).score, 48.530827,
              kEpsilon);
}

TEST(CorpusBleu, FormatAndSignatureAsSacreBleu) {
  // README.md, "Using SacreBLEU from Python": bleu.corpus_score(sys, refs) and
  // bleu.get_signature() (there with version:2.0.0).
  const BleuScore s = corpus_bleu(kHyps, kRefs);
  EXPECT_EQ(
      s.format(),
      "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:qkv-0.1.0");
  EXPECT_EQ(s.format(1, true),
            "BLEU|nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:qkv-0.1.0 = 48.5 "
            "82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  EXPECT_EQ(s.hyp_len, 17);
  EXPECT_EQ(s.ref_len, 18);
  ASSERT_EQ(s.counts.size(), 4u);
  ASSERT_EQ(s.precisions.size(), 4u);
}

TEST(CorpusBleu, VariableNumberOfReferences) {
  // README.md, "Variable Number of References": the first reference of the first sentence
  // is '' -> nrefs:var.
  Streams refs = kRefs;
  refs[0][0] = "";
  const BleuScore s = corpus_bleu(kHyps, refs);
  EXPECT_EQ(
      s.format(),
      "BLEU = 29.44 82.4/42.9/27.3/12.5 (BP = 0.889 ratio = 0.895 hyp_len = 17 ref_len = 19)");
  EXPECT_EQ(s.signature, "nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp|version:qkv-0.1.0");
}

TEST(CorpusBleu, EmptyHypothesesAreScoredNotRemoved) {
  // test_bleu.py, test_corpus_bleu_cases[1]: (('', '', ''), _refs, {}, 0.0).
  const std::vector<std::string> empty = {"", "", ""};
  const BleuScore s = corpus_bleu(empty, kRefs);
  EXPECT_EQ(s.score, 0.0);
  EXPECT_EQ(s.hyp_len, 0);
  EXPECT_EQ(s.bp, 0.0);
  EXPECT_EQ(s.ratio, 0.0);
  EXPECT_EQ(s.format(),
            "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 ratio = 0.000 hyp_len = 0 ref_len = 17)");
}

TEST(CorpusBleu, TokenizeNone) {
  // test_bleu.py, test_corpus_bleu_cases[2]: {'tokenize': 'none'} -> 49.1919566.
  const BleuScore s = corpus_bleu(kHyps, kRefs, {.tokenizer = BleuTokenizer::None});
  EXPECT_NEAR(s.score, 49.1919566, kEpsilon);
  EXPECT_EQ(s.signature, "nrefs:2|case:mixed|eff:no|tok:none|smooth:exp|version:qkv-0.1.0");
}

TEST(CorpusBleu, MaxNgramOrder) {
  // test_bleu.py, test_bleu_max_order: f"{bleu.score:.2f}" for orders 1..6.
  const char* expected[] = {"77.65", "60.50", "53.93", "48.53", "46.14", "43.28"};
  for (int order = 1; order <= 6; ++order) {
    const BleuScore s = corpus_bleu(kHyps, kRefs, {.max_order = order});
    EXPECT_EQ(s.format().substr(7, 5), expected[order - 1]) << "order " << order;
    EXPECT_EQ(s.precisions.size(), size_t(order));
  }
}

TEST(CorpusBleu, NoMatchOfAnyOrderIsZero) {
  // test_bleu.py, test_raw_bleu_cases[0]: now 0.0 (sacreBLEU issue #141).
  const std::vector<std::string> hyps = {"this is a test", "another test"};
  const Streams refs = {{"ref1", "ref2"}};
  EXPECT_EQ(corpus_bleu(hyps, refs, raw_options(0.01)).score, 0.0);
}

TEST(CorpusBleu, RawCorpusBleu) {
  // test_bleu.py, test_raw_bleu_cases[1..2] (expected BLEU / 100).
  const Streams ref = {{"this is a test"}};
  EXPECT_NEAR(corpus_bleu(std::vector<std::string>{"this is a test"}, ref, raw_options(0.01)).score,
              100.0, 100 * kEpsilon);
  EXPECT_NEAR(corpus_bleu(std::vector<std::string>{"this is a fest"}, ref, raw_options(0.01)).score,
              100 * 0.223606797749979, 100 * kEpsilon);
}

TEST(CorpusBleu, EffectiveOrder) {
  // test_bleu.py, test_case_effective_order (raw_corpus_bleu with floor 0.01).
  const Streams ref = {{"a test"}};
  const auto score = [&](const char* hyp) {
    return corpus_bleu(std::vector<std::string>{hyp}, ref, raw_options(0.01)).score / 100;
  };
  EXPECT_NEAR(score("test"), 0.3678794411714425, kEpsilon);
  EXPECT_NEAR(score("a test"), 1.0, kEpsilon);
  EXPECT_NEAR(score("a little test"), 0.03218297948685433, kEpsilon);
}

TEST(CorpusBleu, Statistics) {
  // test_bleu.py, test_case_statistics: counts [4, 2, 1, 0], totals [6, 5, 4, 3].
  const BleuScore s =
      corpus_bleu(std::vector<std::string>{"am I am a character sequence"},
                  Streams{{"I am a symbol string sequence a a"}}, raw_options(0.01));
  EXPECT_EQ(s.counts, (std::vector<int64_t>{4, 2, 1, 0}));
  EXPECT_EQ(s.totals, (std::vector<int64_t>{6, 5, 4, 3}));
}

TEST(CorpusBleu, FloorOffset) {
  // test_bleu.py, test_case_offset: 0 with floor 0.0, 0.1555722182 with the default 0.1.
  const std::vector<std::string> hyp = {"am I am a character sequence"};
  const Streams ref = {{"I am a symbol string sequence a a"}};
  EXPECT_NEAR(corpus_bleu(hyp, ref, raw_options(0.0)).score / 100, 0.0, kEpsilon);
  BleuOptions floor_default = raw_options(0.0);
  floor_default.smooth_value.reset();
  EXPECT_NEAR(corpus_bleu(hyp, ref, floor_default).score / 100, 0.1555722182, kEpsilon);
  EXPECT_EQ(corpus_bleu(hyp, ref, floor_default).signature,
            "nrefs:1|case:mixed|eff:yes|tok:none|smooth:floor[0.10]|version:qkv-0.1.0");
}

TEST(ComputeBleu, Scoring) {
  // test_bleu.py, test_case_scoring: BLEU.compute_bleu's default smoothing is 'none'.
  const BleuStats stats{
      .hyp_len = 11, .ref_len = 11, .matches = {9, 7, 5, 3}, .totals = {10, 8, 6, 4}};
  EXPECT_NEAR(compute_bleu(stats, {.smoothing = BleuSmoothing::None}).score / 100, 0.8375922397,
              kEpsilon);
}

TEST(ComputeBleu, DegenerateStatistics) {
  // test_bleu.py, test_case_degenerate_stats (floor smoothing with the given value): all
  // exactly 0.0.
  struct Case {
    std::vector<int64_t> matches, totals;
    int64_t hyp_len, ref_len;
    double floor;
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, {4, 4, 2, 1}, 0, 1, 0.0}, {{0, 0, 0, 0}, {10, 11, 12, 0}, 14, 10, 0.0},
      {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, 0.0}, {{6, 5, 4, 0}, {6, 5, 4, 3}, 6, 6, 0.0},
      {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, 0.1}, {{0, 0, 0, 0}, {0, 0, 0, 0}, 1, 5, 0.01}};
  for (const Case& c : cases) {
    const BleuStats stats{
        .hyp_len = c.hyp_len, .ref_len = c.ref_len, .matches = c.matches, .totals = c.totals};
    EXPECT_EQ(
        compute_bleu(stats, {.smoothing = BleuSmoothing::Floor, .smooth_value = c.floor}).score,
        0.0);
  }
}

// test/test_sentence_bleu.py: SYS and REF (sacreBLEU issue #98), EPSILON 1e-3.
const std::string kSys =
    "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;";
const std::vector<std::string> kRef = {"producţia de zahăr brut se exprimă în zahăr alb;"};

TEST(SentenceBleu, DefaultIsExpSmoothingWithEffectiveOrder) {
  // test_sentence_bleu.py, test_cases[0]: ('exp', None, False, '13a', 8.493).
  const BleuScore s = sentence_bleu(kSys, kRef);
  EXPECT_NEAR(s.score, 8.493, 1e-3);
  EXPECT_EQ(s.signature, "nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:qkv-0.1.0");
}

TEST(SentenceBleu, SmoothingMethods) {
  // test_sentence_bleu.py, test_cases[1..7] (effective order, 13a).
  struct Case {
    BleuSmoothing smoothing;
    std::optional<double> value;
    double expected;
  };
  const Case cases[] = {{BleuSmoothing::None, {}, 0.0},       {BleuSmoothing::Floor, {}, 4.51688},
                        {BleuSmoothing::Floor, 0.1, 4.51688}, {BleuSmoothing::Floor, 0.5, 10.10},
                        {BleuSmoothing::AddK, {}, 14.882},    {BleuSmoothing::AddK, 1.0, 14.882},
                        {BleuSmoothing::AddK, 2.0, 21.389}};
  for (const Case& c : cases) {
    const BleuOptions options{
        .smoothing = c.smoothing, .smooth_value = c.value, .effective_order = true};
    EXPECT_NEAR(sentence_bleu(kSys, kRef, options).score, c.expected, 1e-3)
        << bleu_signature(options, 1);
  }
  EXPECT_EQ(bleu_signature({.smoothing = BleuSmoothing::AddK}, 1),
            "nrefs:1|case:mixed|eff:no|tok:13a|smooth:add-k[1.00]|version:qkv-0.1.0");
}

TEST(SentenceBleu, TokenizeNone) {
  // test_sentence_bleu.py, test_cases[8]: ('exp', None, False, 'none', 7.347).
  EXPECT_NEAR(
      sentence_bleu(kSys, kRef, {.tokenizer = BleuTokenizer::None, .effective_order = true}).score,
      7.347, 1e-3);
}

TEST(SentenceBleu, NoMatchIsZeroWhateverTheSmoothing) {
  // test_sentence_bleu.py, test_cases_zero_bleu: SYS_0 "this is a cat", REF_0 "okay thanks".
  const std::vector<std::string> ref = {"okay thanks"};
  for (BleuSmoothing m :
       {BleuSmoothing::Exp, BleuSmoothing::None, BleuSmoothing::Floor, BleuSmoothing::AddK})
    EXPECT_EQ(sentence_bleu("this is a cat", ref, {.smoothing = m, .effective_order = true}).score,
              0.0);
}

TEST(SentenceBleu, MultipleReferencesEqualStreamsOfOneLine) {
  // Sentence BLEU is corpus BLEU of a one-line corpus (sacreBLEU's sentence_score).
  const std::vector<std::string> refs = {kRefs[0][2], kRefs[1][2]};
  const BleuOptions options{.effective_order = true};
  EXPECT_EQ(sentence_bleu(kHyps[2], refs, options).format(),
            corpus_bleu(std::vector<std::string>{kHyps[2]}, Streams{{refs[0]}, {refs[1]}}, options)
                .format());
}

TEST(CorpusBleu, ShortSegmentsWithoutFourGramsScoreZeroWithoutEffectiveOrder) {
  // No hypothesis 4-gram at all: precision 0 enters the log as my_log(0) = -9999999999,
  // so corpus BLEU is 0 (sacreBLEU's compute_bleu), while effective order ignores order 4.
  const std::vector<std::string> hyps = {"a b c"};
  const Streams refs = {{"a b c"}};
  EXPECT_EQ(corpus_bleu(hyps, refs).score, 0.0);
  EXPECT_EQ(corpus_bleu(hyps, refs).format(),
            "BLEU = 0.00 100.0/100.0/100.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 3 ref_len = 3)");
  EXPECT_NEAR(corpus_bleu(hyps, refs, {.effective_order = true}).score, 100.0, 1e-12);
}

TEST(CorpusBleu, ClosestReferenceLengthPrefersTheShorterOnATie) {
  // _get_closest_ref_len: hyp of 2 tokens, refs of 1 and 3 tokens -> 1 (no brevity penalty).
  const BleuScore s = corpus_bleu(std::vector<std::string>{"x y"}, Streams{{"z z z"}, {"y"}});
  EXPECT_EQ(s.ref_len, 1);
  EXPECT_EQ(s.bp, 1.0);
}

}  // namespace
}  // namespace qkv::eval
