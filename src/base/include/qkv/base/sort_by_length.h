// The one ordering every batcher uses (decoding, scoring, the entropy measure, training):
// shortest first, and stable, so that items of equal length keep their input order. A
// batch then holds similar lengths (little padding), and the batches, hence every result
// summed over them, are the same on every run and thread count.
#pragma once

#include <algorithm>
#include <vector>

namespace qkv {

// Sorts `items` (indices, usually) by length_of(item) ascending, stable. The length may
// be any ordered value, e.g. a pair (target length, source length) to break ties.
template <class Item, class LengthOf>
void sort_by_length(std::vector<Item>& items, LengthOf length_of) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const Item& a, const Item& b) { return length_of(a) < length_of(b); });
}

}  // namespace qkv
