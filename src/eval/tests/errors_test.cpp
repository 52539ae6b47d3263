// Bad input gives a typed qkv::ValueError whose message names what is wrong and where.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/eval/bleu.h"
#include "qkv/eval/chrf.h"

namespace qkv::eval {
namespace {

using Streams = std::vector<std::vector<std::string>>;

// Runs `fn` and expects a ValueError whose message contains every one of `parts`.
void expect_value_error(const std::function<void()>& fn, std::vector<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const ValueError& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
  }
}

const std::vector<std::string> kHyps = {"a b c", "d e f", "g h i"};

TEST(EvalErrors, MismatchedHypothesesAndReferencesNameBothCounts) {
  const Streams refs = {{"a b c", "d e f", "g h i"}, {"a b c", "d e f"}};
  expect_value_error([&] { corpus_bleu(kHyps, refs); },
                     {"corpus_bleu", "3 hypotheses", "reference stream 2 has 2 lines"});
  expect_value_error([&] { corpus_chrf(kHyps, refs); },
                     {"corpus_chrf", "3 hypotheses", "reference stream 2 has 2 lines"});
  const Streams longer = {{"a", "b", "c", "d"}};
  expect_value_error([&] { corpus_bleu(kHyps, longer); },
                     {"3 hypotheses", "reference stream 1 has 4 lines"});
}

TEST(EvalErrors, InvalidUtf8NamesTheLine) {
  const std::vector<std::string> hyps = {"fine", "also fine", "broken \xE2\x82"};
  const Streams refs = {{"x", "y", "z"}};
  expect_value_error([&] { corpus_bleu(hyps, refs); },
                     {"corpus_bleu: hypotheses line 3 is not valid UTF-8"});
  expect_value_error([&] { corpus_chrf(hyps, refs); },
                     {"corpus_chrf: hypotheses line 3 is not valid UTF-8"});
  const Streams bad_ref = {{"x", "y", "z"}, {"x", "\x80y", "z"}};
  expect_value_error([&] { corpus_bleu(kHyps, bad_ref); },
                     {"reference stream 2 line 2 is not valid UTF-8", "byte 1"});
  expect_value_error([&] { sentence_bleu("ok", std::vector<std::string>{"\xFE"}); },
                     {"sentence_bleu: reference stream 1 line 1 is not valid UTF-8"});
}

TEST(EvalErrors, EmptyCorpusAndMissingReferences) {
  // sacreBLEU raises on an empty hypothesis list and on a segment whose references are all
  // empty ("Empty or `None` reference sentence found.").
  const std::vector<std::string> none;
  expect_value_error([&] { corpus_bleu(none, Streams{{}}); }, {"no hypotheses"});
  expect_value_error([&] { corpus_chrf(none, Streams{{}}); }, {"no hypotheses"});
  expect_value_error([&] { corpus_bleu(kHyps, Streams{}); }, {"no reference streams"});
  const Streams empty_line = {{"a", "", "c"}, {"a", "", "c"}};
  expect_value_error([&] { corpus_bleu(kHyps, empty_line); }, {"segment 2 has no reference"});
  expect_value_error([&] { sentence_chrf("a", std::vector<std::string>{""}); },
                     {"segment 1 has no reference"});
}

TEST(EvalErrors, BadOptions) {
  const Streams refs = {{"a", "b", "c"}};
  expect_value_error([&] { corpus_bleu(kHyps, refs, {.max_order = 0}); }, {"max_order", "0"});
  expect_value_error(
      [&] { corpus_bleu(kHyps, refs, {.smoothing = BleuSmoothing::Floor, .smooth_value = -1}); },
      {"smooth_value"});
  // A floor above one match would score an order with no match above a perfect one.
  expect_value_error(
      [&] { corpus_bleu(kHyps, refs, {.smoothing = BleuSmoothing::Floor, .smooth_value = 1.5}); },
      {"smooth_value", "floor", "at most 1", "1.5"});
  EXPECT_NO_THROW(
      corpus_bleu(kHyps, refs, {.smoothing = BleuSmoothing::AddK, .smooth_value = 1.5}));
  expect_value_error([&] { corpus_chrf(kHyps, refs, {.char_order = 0}); }, {"char_order"});
  expect_value_error([&] { corpus_chrf(kHyps, refs, {.beta = -1}); }, {"beta"});
  expect_value_error([&] { compute_bleu(BleuStats{.matches = {1}, .totals = {1}}); },
                     {"compute_bleu", "max_order is 4"});
}

}  // namespace
}  // namespace qkv::eval
