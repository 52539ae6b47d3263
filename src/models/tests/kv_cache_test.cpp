// The decoder's self-attention cache: appends in place past its initial capacity, reorders
// along B (duplicates, dropped rows, a new batch size) and always shows exactly the rows
// a plain concatenate-and-gather cache would hold.
#include "detail/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "qkv/testing/tensors.h"

namespace qkv::models::detail {
namespace {

using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

// The naive cache: every position's row kept whole, [B, H, t, Dh] built on demand.
struct NaiveCache {
  std::vector<Tensor> rows;  // each [B, H, 1, Dh]

  Tensor view() const {
    const Shape& r = rows.front().shape();
    Tensor out = Tensor::empty({r[0], r[1], int64_t(rows.size()), r[3]}, rows.front().dtype());
    for (size_t t = 0; t < rows.size(); ++t)
      copy_into(rows[t], out.slice(2, int64_t(t), int64_t(t) + 1));
    return out;
  }
  void reorder(const std::vector<int64_t>& indices) {
    for (Tensor& row : rows) {
      const Shape& r = row.shape();
      Tensor moved = Tensor::empty({int64_t(indices.size()), r[1], 1, r[3]}, row.dtype());
      for (size_t b = 0; b < indices.size(); ++b)
        copy_into(row.slice(0, indices[b], indices[b] + 1),
                  moved.slice(0, int64_t(b), int64_t(b) + 1));
      row = moved;
    }
  }
};

TEST(KvCache, AppendsAndReordersLikeConcatenateAndGather) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    KvCache cache;
    NaiveCache naive;
    EXPECT_FALSE(cache.view().defined());
    int64_t batch = 6;
    uint64_t seed = 1;
    // 75 steps: past the initial capacity twice; a reorder every few steps, the batch
    // shrinking as a beam search drops finished sentences.
    for (int64_t step = 0; step < 75; ++step) {
      const Tensor row = random_tensor({batch, 3, 1, 5}, dtype, seed++);
      cache.append(row);
      naive.rows.push_back(row);
      if (step % 4 == 3) {
        std::vector<int64_t> indices;
        const int64_t next = step == 39 ? batch - 2 : batch;
        for (int64_t b = 0; b < next; ++b) indices.push_back((b * 5 + step) % batch);
        cache.reorder(indices);
        naive.reorder(indices);
        batch = next;
      }
      ASSERT_EQ(cache.length(), step + 1);
      ASSERT_TRUE(bitwise_equal(cache.view(), naive.view())) << "step " << step;
    }
  }
}

// The in-place reorder against the gather, for every kind of index list: permutations
// (cycles, which need a row set aside), a beam's duplicates, shrinking, growing back into
// rows the buffer still has, and growing past them.
TEST(KvCache, InPlaceReorderEqualsGatherForEveryKindOfIndices) {
  KvCache cache;
  NaiveCache naive;
  int64_t batch = 8;
  uint64_t seed = 11;
  std::mt19937_64 rng(5);
  auto below = [&](int64_t n) { return int64_t(rng() % uint64_t(n)); };
  for (int64_t step = 0; step < 120; ++step) {
    const Tensor row = random_tensor({batch, 2, 1, 3}, DType::F32, seed++);
    cache.append(row);
    naive.rows.push_back(row);
    std::vector<int64_t> indices;
    switch (step % 6) {
      case 0: {  // a permutation: its cycles
        indices.resize(size_t(batch));
        for (int64_t b = 0; b < batch; ++b) indices[size_t(b)] = b;
        std::shuffle(indices.begin(), indices.end(), rng);
        break;
      }
      case 1:  // a swap of two rows: one 2-cycle
        for (int64_t b = 0; b < batch; ++b) indices.push_back(b);
        std::swap(indices[0], indices[size_t(batch - 1)]);
        break;
      case 2:  // beam-like: groups of 4 draw from their own rows, with repeats
        for (int64_t b = 0; b < batch; ++b) {
          const int64_t group = b / 4 * 4, size = std::min<int64_t>(4, batch - group);
          indices.push_back(group + below(size));
        }
        break;
      case 3:  // shrink: drop a random row, keep the order
        for (int64_t b = 0; b < batch; ++b)
          if (batch <= 2 || b != step % batch) indices.push_back(b);
        break;
      case 4:  // grow by one (back into rows the buffer had, or past them)
        for (int64_t b = 0; b <= batch; ++b) indices.push_back(below(batch));
        break;
      default:  // anything: random rows, random count
        for (int64_t b = 0, n = 1 + below(batch + 2); b < n; ++b) indices.push_back(below(batch));
    }
    cache.reorder(indices);
    naive.reorder(indices);
    batch = int64_t(indices.size());
    ASSERT_TRUE(bitwise_equal(cache.view(), naive.view())) << "step " << step;
  }
}

TEST(KvCache, IdentityReorderAndClearKeepTheContents) {
  KvCache cache;
  const Tensor a = random_tensor({2, 2, 1, 4}, DType::F32, 3);
  cache.append(a);
  const std::vector<int64_t> identity{0, 1};
  cache.reorder(identity);
  EXPECT_TRUE(bitwise_equal(cache.view(), a));
  cache.clear();
  EXPECT_EQ(cache.length(), 0);
  // After clear() a batch of another shape starts afresh.
  const Tensor b = random_tensor({3, 1, 1, 2}, DType::F32, 4);
  cache.append(b);
  EXPECT_TRUE(bitwise_equal(cache.view(), b));
}

// After clear() a batch with no more rows reuses the buffer; the rows past it stay unused
// until a reorder needs them, and a reorder past the buffer's rows replaces it.
TEST(KvCache, ClearKeepsTheBufferForBatchesWithFewerRows) {
  KvCache cache;
  NaiveCache naive;
  for (int64_t t = 0; t < 3; ++t) cache.append(random_tensor({6, 2, 1, 4}, DType::F32, 30 + t));
  const void* buffer = cache.view().view().raw_data();
  cache.clear();
  for (int64_t t = 0; t < 40; ++t) {  // past the initial capacity
    const Tensor row = random_tensor({4, 2, 1, 4}, DType::F32, 40 + uint64_t(t));
    cache.append(row);
    naive.rows.push_back(row);
    if (t == 0) {
      EXPECT_EQ(cache.view().view().raw_data(), buffer);
    }
  }
  ASSERT_TRUE(bitwise_equal(cache.view(), naive.view()));
  for (const std::vector<int64_t>& indices :
       {std::vector<int64_t>{3, 3, 0, 1, 2, 2}, {5, 4, 0, 0, 1, 2, 3, 4, 5}, {8, 1}}) {
    cache.reorder(indices);  // 4 -> 6 rows (in the buffer), 6 -> 9 (past it), 9 -> 2
    naive.reorder(indices);
    ASSERT_TRUE(bitwise_equal(cache.view(), naive.view()));
  }
}

TEST(KvCache, RejectsMismatchedRowsAndIndices) {
  KvCache cache;
  EXPECT_THROW(cache.append(random_tensor({2, 2, 2, 4}, DType::F32, 1)), ShapeError);
  cache.append(random_tensor({2, 2, 1, 4}, DType::F32, 1));
  EXPECT_THROW(cache.append(random_tensor({3, 2, 1, 4}, DType::F32, 2)), ShapeError);
  EXPECT_THROW(cache.append(random_tensor({2, 2, 1, 4}, DType::F64, 2)), ShapeError);
  const std::vector<int64_t> outside{0, 2};
  EXPECT_THROW(cache.reorder(outside), IndexError);
  EXPECT_THROW(cache.reorder({}), ValueError);
  EXPECT_EQ(cache.length(), 1);  // nothing changed by the refused calls
}

}  // namespace
}  // namespace qkv::models::detail
