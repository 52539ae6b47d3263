// Subword merging: source columns are summed, target rows averaged, labels joined
// without SentencePiece's "▁".
#include <gtest/gtest.h>

#include <numeric>

#include "qkv/viz/heatmap.h"

namespace qkv::viz {
namespace {

// Source "▁the ▁ca t ▁sat" (3 words), target "▁die ▁Kat ze" (2 words).
AttentionMap pieces() {
  return {.source = {"\u2581the", "\u2581ca", "t", "\u2581sat"},
          .target = {"\u2581die", "\u2581Kat", "ze"},
          .weights = {0.7f, 0.1f, 0.1f, 0.1f,  //
                      0.1f, 0.4f, 0.4f, 0.1f,  //
                      0.0f, 0.2f, 0.6f, 0.2f},
          .title = "pieces"};
}

TEST(MergeSubwords, SumsSourceColumnsAndAveragesTargetRows) {
  const AttentionMap map = pieces();
  const AttentionMap words = merge_subwords(map, sentencepiece_word_starts(map.source),
                                            sentencepiece_word_starts(map.target));
  EXPECT_EQ(words.source, (std::vector<std::string>{"the", "cat", "sat"}));
  EXPECT_EQ(words.target, (std::vector<std::string>{"die", "Katze"}));
  EXPECT_EQ(words.title, "pieces");
  // "die": one piece, columns "ca"+"t" summed.
  // "Katze": mean of rows (0.1, 0.8, 0.1) and (0.0, 0.8, 0.2).
  const std::vector<float> expected = {0.7f, 0.2f, 0.1f, 0.05f, 0.8f, 0.15f};
  ASSERT_EQ(words.weights.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(words.weights[i], expected[i], 1e-6) << "weight " << i;
}

TEST(MergeSubwords, RowsThatAreDistributionsStayDistributions) {
  const AttentionMap map = pieces();
  const AttentionMap words = merge_subwords(map, {true, true, false, true}, {true, true, false});
  for (size_t r = 0; r < words.target.size(); ++r) {
    const auto row = words.weights.begin() + static_cast<std::ptrdiff_t>(r * 3);
    EXPECT_NEAR(std::accumulate(row, row + 3, 0.0), 1.0, 1e-6) << "row " << r;
  }
}

TEST(MergeSubwords, AllWordStartsIsTheIdentityExceptForMarkers) {
  const AttentionMap map = pieces();
  const AttentionMap same = merge_subwords(map, {true, true, true, true}, {true, true, true});
  EXPECT_EQ(same.weights, map.weights);
  EXPECT_EQ(same.source, (std::vector<std::string>{"the", "ca", "t", "sat"}));
}

TEST(MergeSubwords, TheFirstTokenAlwaysStartsAWord) {
  const AttentionMap map = pieces();
  const AttentionMap words = merge_subwords(map, {false, false, false, false}, {false, true, true});
  EXPECT_EQ(words.source, (std::vector<std::string>{"thecatsat"}));
  ASSERT_EQ(words.weights.size(), 3u);
  EXPECT_NEAR(words.weights[0], 1.0f, 1e-6);
}

TEST(SentencePieceWordStarts, MarkersAndSpecialSymbols) {
  const std::vector<std::string> tokens = {"Wo", "\u2581geht", "s", "?", "</s>"};
  // Token 0 always starts; "</s>" is its own word.
  EXPECT_EQ(sentencepiece_word_starts(tokens), (std::vector<bool>{true, true, false, false, true}));
  EXPECT_EQ(sentencepiece_word_starts({"<unk>", "x", "\u2581y"}),
            (std::vector<bool>{true, true, true}));
  EXPECT_TRUE(sentencepiece_word_starts({}).empty());
}

TEST(SentencePieceWordStarts, MergedLabelsKeepUtf8Intact) {
  const AttentionMap map{.source = {"\u2581Gr", "\u00F6\u00DF", "e"},
                         .target = {"\u2581\u6771", "\u4EAC"},
                         .weights = {0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f}};
  const AttentionMap words = merge_subwords(map, sentencepiece_word_starts(map.source),
                                            sentencepiece_word_starts(map.target));
  EXPECT_EQ(words.source, (std::vector<std::string>{"Gr\u00F6\u00DFe"}));
  EXPECT_EQ(words.target, (std::vector<std::string>{"\u6771\u4EAC"}));
  ASSERT_EQ(words.weights.size(), 1u);
  EXPECT_NEAR(words.weights[0], 1.0f, 1e-6);
}

}  // namespace
}  // namespace qkv::viz
