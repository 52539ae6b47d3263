#include "qkv/testing/tiny_corpus.h"

#include <gtest/gtest.h>

#include "qkv/base/rng.h"
#include "qkv/testing/files.h"

namespace qkv::testing {

TinyCorpus tiny_corpus(int pairs, uint64_t seed, const TinyCorpusShape& shape) {
  static const std::vector<std::string> kSource = {"red",  "blue", "dog", "cat",   "man",  "girl",
                                                   "runs", "sits", "big", "small", "park", "ball"};
  static const std::vector<std::string> kTarget = {"rot",   "blau",  "hund",  "katze",
                                                   "mann",  "kind",  "lauft", "sitzt",
                                                   "gross", "klein", "platz", "ball"};
  EXPECT_TRUE(shape.words >= 1 && size_t(shape.words) <= kSource.size()) << shape.words;
  EXPECT_TRUE(shape.min_length >= 1 && shape.length_spread >= 1);
  Rng rng(seed, shape.rng_stream);
  TinyCorpus c;
  for (int i = 0; i < pairs; ++i) {
    const uint64_t n = uint64_t(shape.min_length) + rng.uniform_int(uint64_t(shape.length_spread));
    std::vector<uint64_t> words;
    for (uint64_t j = 0; j < n; ++j) words.push_back(rng.uniform_int(uint64_t(shape.words)));
    std::string src, tgt;
    for (uint64_t j = 0; j < n; ++j) {
      src += (j ? " " : "") + kSource[words[j]];
      tgt += (j ? " " : "") + kTarget[words[n - 1 - j]];
    }
    c.source.push_back(src);
    c.target.push_back(tgt);
  }
  return c;
}

void write_tiny_corpus(const std::filesystem::path& source, const std::filesystem::path& target,
                       const TinyCorpus& corpus) {
  write_lines(source, corpus.source);
  write_lines(target, corpus.target);
}

}  // namespace qkv::testing
