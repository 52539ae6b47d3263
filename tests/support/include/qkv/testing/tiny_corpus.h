// A tiny synthetic translation task for tests that train: English words "translated"
// word by word into German ones, in reverse order, so a model must learn both a lexicon and
// attention that looks backwards. Deterministic in the seed; the shape options exist
// because suites were written against different lexicon sizes and lengths, and their
// expected results depend on exactly these sentences.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace qkv::testing {

struct TinyCorpusShape {
  int words = 12;      // the first `words` of the 12-word lexicon (at most 12)
  int min_length = 2;  // words per sentence: min_length + uniform [0, length_spread)
  int length_spread = 5;
  uint64_t rng_stream = 0;  // the Rng stream drawn from
};

struct TinyCorpus {
  std::vector<std::string> source, target;
};

// `pairs` sentence pairs drawn from Rng(seed, shape.rng_stream).
TinyCorpus tiny_corpus(int pairs, uint64_t seed, const TinyCorpusShape& shape = {});

// Writes the corpus as two line files; returns nothing, fails the test on a write error.
void write_tiny_corpus(const std::filesystem::path& source, const std::filesystem::path& target,
                       const TinyCorpus& corpus);

}  // namespace qkv::testing
