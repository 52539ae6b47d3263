// The 13a tokeniser, corpus/sentence BLEU and chrF, and the by-length table of src/eval on
// the input bytes. The first two bytes pick the options, the rest are lines: with R
// reference streams (1-3), every group of R + 1 lines is a hypothesis and its R
// references (the first hypothesis line doubles as the source for score_by_length).
// Accepted input must give finite scores in [0, 100] and well-formed tokens.
#include <cmath>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "qkv/eval/bleu.h"
#include "qkv/eval/by_length.h"
#include "qkv/eval/chrf.h"
#include "qkv/eval/tokenize_13a.h"

namespace {

using namespace qkv;

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

void check_score(double score, const char* what) {
  if (!std::isfinite(score) || score < 0.0 || score > 100.0 + 1e-9) fuzz::invariant_failed(what);
}

void check_tokens(const std::string& tokens) {
  if (!tokens.empty() && (tokens.front() == ' ' || tokens.back() == ' '))
    fuzz::invariant_failed("13a tokens start or end with a space");
  if (tokens.find("  ") != std::string::npos)
    fuzz::invariant_failed("13a tokens separated by more than one space");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t a = data[0], b = data[1];
  const std::vector<std::string> lines = split_lines(fuzz::as_text(data + 2, size - 2));

  eval::BleuOptions bleu;
  bleu.tokenizer = a & 1 ? eval::BleuTokenizer::None : eval::BleuTokenizer::Mteval13a;
  bleu.smoothing = static_cast<eval::BleuSmoothing>((a >> 1) & 3);
  if (a & 8) bleu.smooth_value = double(b & 7) / 4.0;
  bleu.max_order = 1 + ((a >> 4) & 3) + (b >> 7);  // 1..5
  bleu.effective_order = (a & 64) != 0;
  eval::ChrfOptions chrf;
  chrf.char_order = 1 + ((b >> 3) & 7) % 6;  // 1..6
  chrf.beta = (b >> 6) & 1 ? 3 : (a & 128 ? 0 : 2);
  chrf.whitespace = (b & 1) != 0;
  chrf.eps_smoothing = (b & 2) != 0;
  const size_t nrefs = 1 + size_t(b & 4 ? 1 : 0) + size_t(a & 128 ? 1 : 0);  // 1..3

  for (const std::string& line : lines)
    fuzz::expect_only_qkv_errors([&] { check_tokens(eval::tokenize_13a(line)); });

  const size_t n = lines.size() / (nrefs + 1);
  std::vector<std::string> hyps;
  std::vector<std::vector<std::string>> refs(nrefs);
  for (size_t i = 0; i < n; ++i) {
    hyps.push_back(lines[i * (nrefs + 1)]);
    for (size_t r = 0; r < nrefs; ++r) refs[r].push_back(lines[i * (nrefs + 1) + 1 + r]);
  }
  fuzz::expect_only_qkv_errors([&] {
    const eval::BleuScore s = eval::corpus_bleu(hyps, refs, bleu);
    check_score(s.score, "corpus BLEU outside [0, 100]");
    (void)s.format(2, true);
  });
  fuzz::expect_only_qkv_errors(
      [&] { check_score(eval::corpus_chrf(hyps, refs, chrf).score, "chrF outside [0, 100]"); });
  if (n > 0) {
    std::vector<std::string> first_refs;
    for (size_t r = 0; r < nrefs; ++r) first_refs.push_back(refs[r][0]);
    fuzz::expect_only_qkv_errors([&] {
      check_score(eval::sentence_bleu(hyps[0], first_refs, bleu).score,
                  "sentence BLEU outside [0, 100]");
    });
    fuzz::expect_only_qkv_errors([&] {
      check_score(eval::sentence_chrf(hyps[0], first_refs, chrf).score,
                  "sentence chrF outside [0, 100]");
    });
  }
  fuzz::expect_only_qkv_errors([&] {
    const auto buckets = eval::score_by_length(hyps, hyps, refs, {.bleu = bleu, .chrf = chrf});
    for (const eval::LengthBucket& bucket : buckets) {
      if (bucket.bleu) check_score(bucket.bleu->score, "bucket BLEU outside [0, 100]");
      if (bucket.chrf) check_score(bucket.chrf->score, "bucket chrF outside [0, 100]");
    }
    (void)eval::format_by_length(buckets);
  });
  return 0;
}
