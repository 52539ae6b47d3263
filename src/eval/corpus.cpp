#include "detail/corpus.h"

#include <set>

#include "detail/text.h"
#include "qkv/base/error.h"
#include "qkv/base/format.h"

#ifndef QKV_EVAL_VERSION
#error "QKV_EVAL_VERSION is set by src/eval/CMakeLists.txt"
#endif

namespace qkv::eval::detail {

Corpus gather_corpus(std::string_view who, std::span<const std::string> hypotheses,
                     std::span<const std::vector<std::string>> references) {
  const size_t n = hypotheses.size();
  QKV_CHECK(n > 0, ValueError, who, ": no hypotheses; an empty corpus has no score");
  QKV_CHECK(!references.empty(), ValueError, who,
            ": no reference streams; pass at least one list of references");
  for (size_t k = 0; k < references.size(); ++k)
    QKV_CHECK(references[k].size() == n, ValueError, who, ": ", n,
              " hypotheses but reference stream ", k + 1, " has ", references[k].size(),
              " lines; every stream needs one line per hypothesis");
  for (size_t i = 0; i < n; ++i)
    check_utf8(hypotheses[i], qkv::detail::concat(who, ": hypotheses line ", i + 1));

  Corpus corpus;
  corpus.references.resize(n);
  std::set<size_t> counts;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < references.size(); ++k) {
      const std::string& ref = references[k][i];
      check_utf8(ref, qkv::detail::concat(who, ": reference stream ", k + 1, " line ", i + 1));
      if (!ref.empty()) corpus.references[i].push_back(ref);
    }
    QKV_CHECK(!corpus.references[i].empty(), ValueError, who, ": segment ", i + 1,
              " has no reference (line ", i + 1, " is empty in every reference stream)");
    counts.insert(corpus.references[i].size());
  }
  corpus.nrefs = counts.size() == 1 ? int(*counts.begin()) : -1;
  return corpus;
}

std::vector<std::vector<std::string>> sentence_streams(std::span<const std::string> references) {
  std::vector<std::vector<std::string>> streams;
  streams.reserve(references.size());
  for (const std::string& ref : references) streams.push_back({ref});
  return streams;
}

std::string nrefs_text(int nrefs) {
  return nrefs < 0 ? "var" : std::to_string(nrefs);
}

std::string version_text() {
  return "qkv-" QKV_EVAL_VERSION;
}

std::string fixed(double value, int decimals) {
  return format_fixed(value, decimals);
}

}  // namespace qkv::eval::detail
