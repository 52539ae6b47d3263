// experiment::finding: the comparison's one-line result, from the numbers.
#include "qkv/experiment/finding.h"

#include <gtest/gtest.h>

namespace qkv::experiment {
namespace {

VariantResult scored(std::string name, double bleu, std::optional<double> low = std::nullopt,
                     std::optional<double> high = std::nullopt) {
  VariantResult v;
  v.name = std::move(name);
  v.bleu = bleu;
  v.bleu_low = low;
  v.bleu_high = high;
  return v;
}

Comparison of(std::vector<VariantResult> variants) {
  Comparison c;
  c.variants = std::move(variants);
  return c;
}

TEST(Finding, BestFirstWithRatiosToTheOthers) {
  // The README's demo table: rnn:none 13.41, rnn:additive 30.77, transformer 20.65.
  EXPECT_EQ(finding(of({scored("rnn:none", 13.41), scored("rnn:additive", 30.77),
                        scored("transformer", 20.65)})),
            "rnn:additive is best: 30.77 BLEU, 1.49\u00D7 transformer (20.65) and 2.29\u00D7 "
            "rnn:none (13.41)");
}

TEST(Finding, SmallGapsAreDifferencesAndOverlappingIntervalsAreSaid) {
  EXPECT_EQ(finding(of({scored("a", 20.0, 18.5, 21.5), scored("b", 19.6, 18.0, 21.0)})),
            "a is best: 20.00 BLEU, +0.40 BLEU over b (19.60); the 95% intervals of a and b "
            "overlap, so this test set does not settle their order");
  // Intervals apart: nothing to add.
  EXPECT_EQ(finding(of({scored("a", 30.0, 29.0, 31.0), scored("b", 20.0, 19.0, 21.0)})),
            "a is best: 30.00 BLEU, 1.50\u00D7 b (20.00)");
  // Against 0 BLEU no ratio exists.
  EXPECT_EQ(finding(of({scored("a", 2.0), scored("b", 0.0)})),
            "a is best: 2.00 BLEU, +2.00 BLEU over b (0.00)");
}

TEST(Finding, TiesOneVariantNothingScoredAndNoVariants) {
  EXPECT_EQ(finding(of({scored("a", 10.0), scored("b", 10.0), scored("c", 5.0)})),
            "a and b tie for best: 10.00 BLEU, 2.00\u00D7 c (5.00)");
  EXPECT_EQ(finding(of({scored("only", 12.345)})), "only: 12.35 BLEU");
  EXPECT_EQ(finding(of({scored("a", 0.0), scored("b", 0.0)})),
            "no variant scored above 0 BLEU on the test set");
  EXPECT_EQ(finding(Comparison{}), "");
}

}  // namespace
}  // namespace qkv::experiment
