// BLEU (Papineni et al., 2002) exactly as sacreBLEU 2.x computes it: our own
// implementation of sacrebleu/metrics/bleu.py, checked against sacreBLEU's published test
// cases (src/eval/tests/bleu_test.cpp).
//
// Defaults equal sacreBLEU's BLEU(): 13a tokenisation, case-sensitive, n-grams up to 4,
// "exp" smoothing, no effective order, brevity penalty against the closest reference
// length (the shorter one on a tie). Texts are UTF-8 strings, one segment per line.
//
// References come as sacreBLEU takes them: a list of streams, each as long as the
// hypotheses (references[k][i] is the k-th reference of segment i). An empty string is
// "no reference" for that segment (a variable number of references; nrefs:var in the
// signature); a segment without any reference is a ValueError, as in sacreBLEU.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::eval {

enum class BleuTokenizer {
  Mteval13a,  // tokenize_13a(): sacreBLEU's default "13a"
  None,       // split on whitespace only: sacreBLEU's "none"
};

// Chen & Cherry (2014), "A Systematic Comparison of Smoothing Techniques for
// Sentence-Level BLEU", as sacreBLEU names them.
enum class BleuSmoothing {
  None,   // zero matches give precision 0 (and the score 0)
  Floor,  // method 1: zero matches count as smooth_value (default 0.1, at most 1) matches
  AddK,   // method 2: add smooth_value (default 1) to matches and totals for n > 1
  Exp,    // method 3 (NIST/mteval-v13a): the k-th zero precision becomes 1 / (2^k total)
};

struct BleuOptions {
  BleuTokenizer tokenizer = BleuTokenizer::Mteval13a;
  BleuSmoothing smoothing = BleuSmoothing::Exp;
  // Floor and AddK only; unset means sacreBLEU's default (0.1 and 1).
  std::optional<double> smooth_value;
  int max_order = 4;  // n-grams 1..max_order, >= 1
  // Average only over the orders that have at least one hypothesis n-gram (sacreBLEU's
  // effective_order): on for sentence BLEU, off for corpus BLEU.
  bool effective_order = false;
};

// BLEU's sufficient statistics, summed over segments.
struct BleuStats {
  int64_t hyp_len = 0;           // hypothesis tokens
  int64_t ref_len = 0;           // closest reference length per segment, summed
  std::vector<int64_t> matches;  // [max_order] clipped n-gram matches, order n at n - 1
  std::vector<int64_t> totals;   // [max_order] hypothesis n-grams
};

struct BleuScore {
  double score = 0.0;              // BLEU in [0, 100]
  std::vector<double> precisions;  // [max_order] n-gram precisions in percent (smoothed)
  std::vector<int64_t> counts;     // [max_order] clipped matches
  std::vector<int64_t> totals;     // [max_order] hypothesis n-grams
  double bp = 0.0;                 // brevity penalty
  double ratio = 0.0;              // hyp_len / ref_len (0 when ref_len is 0)
  int64_t hyp_len = 0, ref_len = 0;
  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:qkv-0.1.0": sacreBLEU's shape,
  // with qkv's version to mark it as this implementation.
  std::string signature;

  // sacreBLEU's text format, e.g.
  //   "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
  // `width` decimals for the score; with_signature gives "BLEU|<signature> = 48.53 ...".
  std::string format(int width = 2, bool with_signature = false) const;
};

// Corpus BLEU of hypotheses [N] against reference streams [R][N].
// Throws ValueError: no hypotheses (sacreBLEU raises on an empty corpus too), no reference
// stream, a stream whose length differs from N (naming both counts), a segment whose
// references are all empty, invalid UTF-8 (naming the stream and 1-based line), bad options.
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      const BleuOptions& options = {});

// Each segment's statistics, the terms corpus_bleu() sums: hypotheses [N] -> [N]. For
// resampling (bootstrap_bleu) and per-segment analysis. Same errors as corpus_bleu.
std::vector<BleuStats> segment_bleu_stats(std::span<const std::string> hypotheses,
                                          std::span<const std::vector<std::string>> references,
                                          const BleuOptions& options = {});

// Sentence BLEU of one hypothesis against its references [R], with sacreBLEU's
// sentence_bleu defaults (exp smoothing, effective order). Same errors as corpus_bleu.
BleuScore sentence_bleu(std::string_view hypothesis, std::span<const std::string> references,
                        const BleuOptions& options = {.effective_order = true});

// BLEU from (summed) statistics: sacreBLEU's BLEU.compute_bleu. `nrefs` (references per
// segment, -1 when it varies) only enters the signature.
BleuScore compute_bleu(const BleuStats& stats, const BleuOptions& options = {}, int nrefs = 1);

// "nrefs:<n or var>|case:mixed|eff:<yes|no>|tok:<13a|none>|smooth:<m>|version:qkv-X.Y.Z";
// smooth is "exp", "none", "floor[0.10]" or "add-k[1.00]" as in sacreBLEU.
std::string bleu_signature(const BleuOptions& options, int nrefs);

}  // namespace qkv::eval
