#include "qkv/data/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "data_test_util.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/rng.h"

namespace qkv::data {
namespace {

using testing::throws_with;

// n pairs with lengths 1..max_len (ids 4..99), drawn with qkv's Rng.
std::shared_ptr<TokenizedCorpus> random_corpus(int64_t n, int64_t max_len, uint64_t seed = 5) {
  auto c = std::make_shared<TokenizedCorpus>();
  Rng rng(seed);
  auto sentence = [&] {
    std::vector<int32_t> ids(1 + rng.uniform_int(static_cast<uint64_t>(max_len)));
    for (auto& id : ids) id = static_cast<int32_t>(4 + rng.uniform_int(96));
    return ids;
  };
  for (int64_t i = 0; i < n; ++i) {
    c->source.push_back(sentence());
    c->target.push_back(sentence());
    c->line_numbers.push_back(i + 1);
  }
  c->stats.read = c->stats.kept = n;
  return c;
}

std::vector<float> row(const Tensor& t, int64_t r) {
  const std::vector<float> all = t.to_vector<float>();
  const int64_t w = t.dim(1);
  return {all.begin() + r * w, all.begin() + (r + 1) * w};
}

void expect_same(const Batch& a, const Batch& b) {
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.src.shape(), b.src.shape());
  EXPECT_EQ(a.src.to_vector<float>(), b.src.to_vector<float>());
  EXPECT_EQ(a.tgt_in.to_vector<float>(), b.tgt_in.to_vector<float>());
  EXPECT_EQ(a.tgt_out.to_vector<float>(), b.tgt_out.to_vector<float>());
}

const BatchOptions kOptions{.mini_batch_words = 256, .max_length = 40};

TEST(Batch, RowsAreSourcePlusEosAndTargetShiftedByBosAndEos) {
  TokenizedCorpus c;
  c.source = {{10, 11, 12}, {20}};
  c.target = {{30}, {40, 41, 42, 43}};
  const std::vector<int64_t> indices = {1, 0};
  const Batch b = make_batch(c, indices, {});
  EXPECT_EQ(b.indices, indices);
  EXPECT_EQ(b.src.shape(), (Shape{2, 4}));
  EXPECT_EQ(row(b.src, 0), (std::vector<float>{20, 3, 0, 0}));
  EXPECT_EQ(row(b.src, 1), (std::vector<float>{10, 11, 12, 3}));
  EXPECT_EQ(b.tgt_in.shape(), (Shape{2, 5}));
  EXPECT_EQ(row(b.tgt_in, 0), (std::vector<float>{2, 40, 41, 42, 43}));
  EXPECT_EQ(row(b.tgt_out, 0), (std::vector<float>{40, 41, 42, 43, 3}));
  EXPECT_EQ(row(b.tgt_in, 1), (std::vector<float>{2, 30, 0, 0, 0}));
  EXPECT_EQ(row(b.tgt_out, 1), (std::vector<float>{30, 3, 0, 0, 0}));
  EXPECT_EQ(b.src_lengths, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(b.tgt_lengths, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(b.src_tokens, 6);
  EXPECT_EQ(b.tgt_tokens, 7);
  EXPECT_EQ(b.size(), 2);

  const Batch no_eos = make_batch(c, indices, {.source_eos = false, .pad_id = 7});
  EXPECT_EQ(row(no_eos.src, 0), (std::vector<float>{20, 7, 7}));
  EXPECT_EQ(no_eos.src_lengths, (std::vector<int64_t>{1, 3}));
}

TEST(Batch, SourceOnlyCorpusHasNoTargetTensors) {
  TokenizedCorpus c;
  c.source = {{5, 6}};
  const Batch b = make_batch(c, std::vector<int64_t>{0}, {});
  EXPECT_EQ(row(b.src, 0), (std::vector<float>{5, 6, 3}));
  EXPECT_FALSE(b.tgt_in.defined());
  EXPECT_FALSE(b.tgt_out.defined());
  EXPECT_TRUE(b.tgt_lengths.empty());
  EXPECT_TRUE(throws_with<IndexError>([&] { make_batch(c, std::vector<int64_t>{1}, {}); },
                                      {"index 1", "[0, 1)"}));
}

TEST(BatchIterator, EveryBatchFitsTheBudget) {
  const auto c = random_corpus(500, 40);
  for (const BatchOptions& o :
       {kOptions, BatchOptions{.mini_batch_words = 41, .max_length = 40},
        BatchOptions{.mini_batch_words = 1000, .max_length = 40, .max_sentences = 7}}) {
    BatchIterator it(c, o, 1);
    for (int64_t k = 0; k < it.batches_per_epoch(); ++k) {
      const Batch b = it.next();
      EXPECT_LE(b.size() * b.src.dim(1), o.mini_batch_words);
      EXPECT_LE(b.size() * b.tgt_out.dim(1), o.mini_batch_words);
      EXPECT_LE(b.tgt_tokens, o.mini_batch_words);
      if (o.max_sentences > 0) {
        EXPECT_LE(b.size(), o.max_sentences);
      }
    }
  }
}

TEST(BatchIterator, EveryPairExactlyOncePerEpoch) {
  const auto c = random_corpus(300, 30);
  BatchIterator it(c, kOptions, 3);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    for (int64_t k = 0; k < it.batches_per_epoch(); ++k) {
      EXPECT_EQ(it.position().epoch, epoch);
      const Batch b = it.next();
      seen.insert(seen.end(), b.indices.begin(), b.indices.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(300);
    for (int64_t i = 0; i < 300; ++i) all[size_t(i)] = i;
    EXPECT_EQ(seen, all) << "epoch " << epoch;
  }
}

TEST(BatchIterator, BatchesHoldNeighbouringTargetLengths) {
  // Sorted by length before cutting: the target-length ranges of two batches overlap
  // at most in one value, so padding stays small.
  const auto c = random_corpus(400, 40);
  BatchIterator it(c, kOptions, 9);
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const auto& batch : it.schedule(0)) {
    size_t lo = SIZE_MAX, hi = 0;
    for (int64_t i : batch) {
      lo = std::min(lo, c->target[size_t(i)].size());
      hi = std::max(hi, c->target[size_t(i)].size());
    }
    ranges.emplace_back(lo, hi);
  }
  for (const auto& a : ranges)
    for (const auto& b : ranges)
      if (&a != &b) {
        EXPECT_TRUE(a.second <= b.first || b.second <= a.first);
      }
}

TEST(BatchIterator, SameSeedSameBatchesAndOtherSeedsOrEpochsDiffer) {
  const auto c = random_corpus(300, 30);
  BatchIterator a(c, kOptions, 11), b(c, kOptions, 11);
  const int64_t n = a.batches_per_epoch();
  for (int64_t k = 0; k < 2 * n; ++k) expect_same(a.next(), b.next());
  BatchIterator other(c, kOptions, 12);
  EXPECT_NE(other.schedule(0), a.schedule(0));
  EXPECT_NE(a.schedule(0), a.schedule(1));
  EXPECT_EQ(other.batches_per_epoch(), n) << "cuts depend only on the lengths";
}

TEST(BatchIterator, ResumingFromASavedPositionGivesTheSameRemainingBatches) {
  const auto c = random_corpus(300, 30);
  BatchIterator reference(c, kOptions, 21);
  const int64_t n = reference.batches_per_epoch();
  std::vector<BatchPosition> saved;
  std::vector<Batch> produced;
  for (int64_t k = 0; k < 3 * n; ++k) {
    saved.push_back(reference.position());
    produced.push_back(reference.next());
  }
  // Mid-epoch, first and last batch of an epoch, and in a later epoch.
  for (int64_t start : {int64_t{0}, int64_t{5}, n - 1, n, n + 3, 2 * n + 1}) {
    BatchIterator resumed(c, kOptions, saved[size_t(start)]);
    EXPECT_EQ(resumed.position().epoch, saved[size_t(start)].epoch);
    for (int64_t k = start; k < 3 * n; ++k) expect_same(resumed.next(), produced[size_t(k)]);
  }
  // The end of an epoch (index == batches_per_epoch) resumes into the next one.
  BatchPosition end_of_epoch = saved[size_t(n)];
  end_of_epoch.epoch = 0;
  end_of_epoch.index = static_cast<uint64_t>(n);
  BatchIterator rolled(c, kOptions, end_of_epoch);
  expect_same(rolled.next(), produced[size_t(n)]);
}

TEST(BatchIterator, ResumeRefusesAnotherCorpusOrOtherOptions) {
  const auto c = random_corpus(100, 20);
  BatchIterator it(c, kOptions, 1);
  const BatchPosition pos = it.position();
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { BatchIterator(random_corpus(100, 20, 6), kOptions, pos); }, {"cannot resume"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { BatchIterator(c, BatchOptions{.mini_batch_words = 300, .max_length = 40}, pos); },
      {"cannot resume", "mini_batch_words"}));
  BatchPosition past = pos;
  past.index = static_cast<uint64_t>(it.batches_per_epoch()) + 1;
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { BatchIterator(c, kOptions, past); }, {"cannot resume"}));
}

TEST(BatchIterator, PairsOverMaxLengthAreSkippedAndCounted) {
  auto c = random_corpus(200, 30);
  c->source[3].assign(21, 7);  // source too long
  c->target[8].assign(25, 7);  // target too long
  c->source[9].assign(20, 7);  // exactly at the limit: kept
  c->target[9].assign(20, 7);
  int64_t too_long = 0;
  for (size_t i = 0; i < c->source.size(); ++i)
    too_long += std::max(c->source[i].size(), c->target[i].size()) > 20 ? 1 : 0;
  const BatchOptions o{.mini_batch_words = 128, .max_length = 20};
  BatchIterator it(c, o, 2);
  EXPECT_EQ(it.stats().skipped_max_length, too_long);
  EXPECT_EQ(it.stats().kept, 200 - too_long);
  EXPECT_EQ(it.stats().read, it.stats().kept + it.stats().skipped());
  EXPECT_NE(it.stats().describe().find("longer than 20 tokens"), std::string::npos);
  std::set<int64_t> seen;
  for (int64_t k = 0; k < it.batches_per_epoch(); ++k) {
    const Batch b = it.next();
    seen.insert(b.indices.begin(), b.indices.end());
    EXPECT_LE(b.src.dim(1), 21);
    EXPECT_LE(b.tgt_in.dim(1), 21);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), 200 - too_long);
  EXPECT_FALSE(seen.contains(3));
  EXPECT_FALSE(seen.contains(8));
  EXPECT_TRUE(seen.contains(9));
}

TEST(BatchIterator, BadOptionsAreFieldErrorsNamingTheField) {
  const auto c = random_corpus(10, 5);
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { BatchIterator(c, BatchOptions{.mini_batch_words = 40, .max_length = 40}, 1); },
      {"mini_batch_words (40)", "max_length + 1 (41)"}));
  EXPECT_TRUE(throws_with<FieldError>([&] { BatchIterator(c, BatchOptions{.max_length = 0}, 1); },
                                      {"max_length"}));
  EXPECT_TRUE(throws_with<FieldError>(
      [&] { BatchIterator(c, BatchOptions{.mini_batch_words = 0}, 1); }, {"mini_batch_words"}));
  EXPECT_TRUE(throws_with<FieldError>(
      [&] { BatchIterator(c, BatchOptions{.max_sentences = -1}, 1); }, {"max_sentences"}));
  auto long_pairs = std::make_shared<TokenizedCorpus>();
  long_pairs->source = {{4, 4, 4}, {5}};
  long_pairs->target = {{4}, {5, 5, 5}};
  long_pairs->stats.read = long_pairs->stats.kept = 2;
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { BatchIterator(long_pairs, BatchOptions{.max_length = 2}, 1); },
      {"no training pair left", "2 longer than 2 tokens", "raise max_length"}));
  auto source_only = std::make_shared<TokenizedCorpus>();
  source_only->source = {{4}};
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { BatchIterator(source_only, kOptions, 1); }, {"need targets"}));
}

TEST(BatchesInOrder, KeepCorpusOrderAndEveryPair) {
  auto c = random_corpus(120, 30);
  c->source[50].assign(500, 9);  // wider than the budget: a batch of its own, not skipped
  const std::vector<Batch> batches = batches_in_order(*c, kOptions);
  std::vector<int64_t> order;
  for (const Batch& b : batches) {
    order.insert(order.end(), b.indices.begin(), b.indices.end());
    if (b.size() > 1) {
      EXPECT_LE(b.size() * b.src.dim(1), kOptions.mini_batch_words);
    }
  }
  std::vector<int64_t> expected(120);
  for (int64_t i = 0; i < 120; ++i) expected[size_t(i)] = i;
  EXPECT_EQ(order, expected);
  const auto lone = std::find_if(batches.begin(), batches.end(), [](const Batch& b) {
    return std::find(b.indices.begin(), b.indices.end(), 50) != b.indices.end();
  });
  ASSERT_NE(lone, batches.end());
  EXPECT_EQ(lone->indices, (std::vector<int64_t>{50}));
  EXPECT_EQ(lone->src.dim(1), 501);
}

}  // namespace
}  // namespace qkv::data
