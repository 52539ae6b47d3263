// Private: what BLEU and chrF share about a corpus: validation of hypotheses against
// reference streams, each segment's references, and pieces of the text formats.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::eval::detail {

struct Corpus {
  // [N][<= R] each segment's non-empty references: sacreBLEU drops "" so that segments
  // may have fewer references than there are streams.
  std::vector<std::vector<std::string_view>> references;
  int nrefs = 0;  // references per segment, -1 ("var") when it varies
};

// Checks hypotheses [N] and reference streams [R][N] and gathers each segment's references.
// `who` ("corpus_bleu", ...) starts every message. Throws ValueError: N == 0, R == 0, a
// stream of another length (naming both counts), invalid UTF-8 (naming the stream and the
// 1-based line), a segment whose references are all "".
Corpus gather_corpus(std::string_view who, std::span<const std::string> hypotheses,
                     std::span<const std::vector<std::string>> references);

// The one-segment corpus of sentence_bleu()/sentence_chrf(): references [R] become R
// streams of one line.
std::vector<std::vector<std::string>> sentence_streams(std::span<const std::string> references);

// "1", "2", ... or "var" (nrefs == -1), as in sacreBLEU's signatures.
std::string nrefs_text(int nrefs);

// "qkv-<project version>": marks a signature as this implementation, not sacreBLEU's.
std::string version_text();

// Python's f"{value:.{decimals}f}" (same correctly rounded digits as printf's %.*f).
std::string fixed(double value, int decimals);

}  // namespace qkv::eval::detail
