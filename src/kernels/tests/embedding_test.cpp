// embedding_gather / embedding_scatter_add against the reference loops.
#include "qkv/kernels/embedding.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

using testing::bitwise_equal;
using testing::kOddSizes;
using testing::random_floats;
using testing::random_ints;
using testing::seed_for;

std::vector<int32_t> random_ids(int64_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> ids;
  for (int64_t v : random_ints(n, seed, 0, vocab - 1)) ids.push_back(int32_t(v));
  return ids;
}

// Gather is a copy: exact.
TEST(Embedding, GatherMatchesReference) {
  for (int64_t dim : kOddSizes)
    for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{300}}) {
      const int64_t vocab = 50;
      const std::vector<float> table = random_floats(vocab * dim, seed_for(dim, n));
      const std::vector<int32_t> ids = random_ids(n, vocab, seed_for(n, dim));
      std::vector<float> got(size_t(n * dim)), want(size_t(n * dim));
      embedding_gather(table.data(), ids.data(), got.data(), n, dim);
      ref::embedding_gather(table.data(), ids.data(), want.data(), n, dim);
      EXPECT_TRUE(bitwise_equal(got, want)) << "n=" << n << " dim=" << dim;
    }
}

// Scatter-add adds the rows in index order, like the reference: bitwise equal, with
// many repeated ids (vocab 5) so accumulation order matters.
TEST(Embedding, ScatterAddMatchesReferenceBitwise) {
  for (int64_t dim : kOddSizes)
    for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{300}}) {
      const int64_t vocab = 5;
      const std::vector<float> dout = random_floats(n * dim, seed_for(dim, n));
      const std::vector<int32_t> ids = random_ids(n, vocab, seed_for(n, dim));
      std::vector<float> got = random_floats(vocab * dim, seed_for(dim, n, 3));
      std::vector<float> want = got;
      embedding_scatter_add(dout.data(), ids.data(), got.data(), n, dim);
      ref::embedding_scatter_add(dout.data(), ids.data(), want.data(), n, dim);
      EXPECT_TRUE(bitwise_equal(got, want)) << "n=" << n << " dim=" << dim;
    }
}

TEST(Embedding, ScatterAddSameForOneAndTwoThreads) {
  const int64_t n = 2000, dim = 1023, vocab = 7;
  const std::vector<float> dout = random_floats(n * dim, 11);
  const std::vector<int32_t> ids = random_ids(n, vocab, 12);
  const int saved = num_threads();
  std::vector<float> results[2];
  for (int t : {1, 2}) {
    set_num_threads(t);
    results[t - 1].assign(size_t(vocab * dim), 0.0f);
    embedding_scatter_add(dout.data(), ids.data(), results[t - 1].data(), n, dim);
  }
  set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(results[0], results[1]));
}

TEST(Embedding, EmptyIsANoOp) {
  std::vector<float> table = {1, 2}, out = {7};
  embedding_gather(table.data(), nullptr, out.data(), 0, 2);
  embedding_scatter_add(out.data(), nullptr, table.data(), 0, 2);
  EXPECT_EQ(out[0], 7.0f);
  EXPECT_EQ(table[0], 1.0f);
}

}  // namespace
}  // namespace qkv::kernels
