#include "qkv/base/sort_by_length.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace qkv {
namespace {

TEST(SortByLength, ShortestFirstAndEqualLengthsKeepTheirInputOrder) {
  const std::vector<std::string> lines = {"ccc", "a", "bb", "x", "yy", "zzz", "q"};
  std::vector<size_t> order = {0, 1, 2, 3, 4, 5, 6};
  sort_by_length(order, [&](size_t i) { return lines[i].size(); });
  EXPECT_EQ(order, (std::vector<size_t>{1, 3, 6, 2, 4, 0, 5}));
}

TEST(SortByLength, APairBreaksTiesByItsSecondLength) {
  // (target length, source length), as the training batcher orders pairs.
  const std::vector<std::pair<int, int>> lengths = {{2, 5}, {1, 9}, {2, 1}, {1, 9}, {2, 3}};
  std::vector<int> order = {0, 1, 2, 3, 4};
  sort_by_length(order, [&](int i) { return lengths[size_t(i)]; });
  EXPECT_EQ(order, (std::vector<int>{1, 3, 2, 4, 0}));
}

}  // namespace
}  // namespace qkv
