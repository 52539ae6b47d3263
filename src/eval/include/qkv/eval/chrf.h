// chrF (Popović, 2015) exactly as sacreBLEU 2.x computes it: our own implementation of
// sacrebleu/metrics/chrf.py, checked against sacreBLEU's published test cases
// (src/eval/tests/chrf_test.cpp).
//
// Defaults equal sacreBLEU's CHRF(): character n-grams of order 1..6 over code points,
// no word n-grams (nw:0, plain chrF, not chrF++), beta 2, whitespace removed (every
// Unicode whitespace character, as Python's str.split()), case-sensitive, and the
// "effective order" average of sacreBLEU 2.x's default (eps_smoothing off): precision and
// recall are averaged over the orders where both hypothesis and reference have n-grams,
// then combined into one F-beta. With eps_smoothing, each order's F-beta is computed with
// a 1e-16 floor for undefined precision/recall and averaged over all orders (chrF++.py,
// Moses and NLTK's way).
//
// References: as for BLEU (bleu.h), streams [R][N]; "" means no reference for that
// segment. With several references a segment takes the statistics of the reference that
// gives it the best F-score (the first one on a tie), as sacreBLEU does.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::eval {

struct ChrfOptions {
  int char_order = 6;          // character n-grams 1..char_order, >= 1
  int beta = 2;                // recall weighs beta times as much as precision, >= 0
  bool whitespace = false;     // keep whitespace inside character n-grams
  bool eps_smoothing = false;  // see above; sacreBLEU 2.x's default is off
};

struct ChrfScore {
  double score = 0.0;  // chrF in [0, 100]
  int beta = 2;
  // "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:qkv-0.1.0" (eff:yes means
  // effective-order averaging, i.e. eps_smoothing off, as in sacreBLEU).
  std::string signature;

  // sacreBLEU's text format: "chrF2 = 59.73" (`width` decimals), or with the signature
  // "chrF2|nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:qkv-0.1.0 = 59.73".
  std::string format(int width = 2, bool with_signature = false) const;
};

// Corpus chrF of hypotheses [N] against reference streams [R][N]: statistics summed over
// segments, then one F-score. Throws ValueError as corpus_bleu() does (empty corpus, no
// or mismatched streams naming both counts, invalid UTF-8 naming the line, a segment with
// only empty references, bad options).
ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      const ChrfOptions& options = {});

// chrF of one hypothesis against its references [R]. Same errors as corpus_chrf.
ChrfScore sentence_chrf(std::string_view hypothesis, std::span<const std::string> references,
                        const ChrfOptions& options = {});

// "nrefs:<n or var>|case:mixed|eff:<yes|no>|nc:<char_order>|nw:0|space:<yes|no>|version:..."
std::string chrf_signature(const ChrfOptions& options, int nrefs);

}  // namespace qkv::eval
