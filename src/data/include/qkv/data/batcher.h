// Batches: tokenised sentence pairs -> padded id tensors, grouped by length under a
// token budget.
//
// Training (BatchIterator): each epoch the pairs are shuffled with the epoch's seed,
// stably sorted by (target length, source length) -- so every length is a bucket and
// within a bucket the order is the shuffle's -- cut greedily into batches that fit the
// budget, and the batch order is shuffled. Padding stays small, the batches differ
// from epoch to epoch, and everything depends only on (corpus, options, seed, epoch):
// a BatchPosition of four integers restores the exact remaining batches on resume.
//
// Translation / evaluation (batches_in_order): corpus order, nothing skipped.
//
// Ids travel as float32 because qkv's embedding takes ids as floats (exact up to 2^24).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qkv/data/parallel_corpus.h"
#include "qkv/data/vocab.h"
#include "qkv/tensor/tensor.h"

namespace qkv::data {

// Sentence pairs as ids, without BOS/EOS.
struct TokenizedCorpus {
  std::vector<std::vector<int32_t>> source;  // [N]
  std::vector<std::vector<int32_t>> target;  // [N], or empty for source-only input
  std::vector<int64_t> line_numbers;         // [N] 1-based corpus line of each pair
  CorpusStats stats;
};

// Encodes both sides with `vocab` (in parallel on qkv's pool; the result does not
// depend on the thread count). A pair whose side encodes to no ids at all (text that
// normalises away, e.g. only zero-width spaces) is dropped and counted as empty.
TokenizedCorpus tokenize(const ParallelCorpus& corpus, const Vocab& vocab);
// Source-only input (translation): every line is kept, even if it encodes to nothing.
TokenizedCorpus tokenize_source(std::span<const std::string> lines, const Vocab& vocab);

struct BatchOptions {
  // Token budget per batch, counted with padding on each side separately:
  //   B * Ts <= mini_batch_words and B * Tt <= mini_batch_words,
  // Ts, Tt the padded widths below. So the real target tokens including EOS (what
  // Marian's --mini-batch-words counts) never exceed it, and neither does any tensor's
  // size. Must be >= max_length + 1 so every kept pair fits alone.
  int64_t mini_batch_words = 4096;
  // Training only: pairs with more than max_length ids on either side (BOS/EOS not
  // counted) are skipped and counted in CorpusStats::skipped_max_length. Must be > 0.
  int64_t max_length = 100;
  // At most this many pairs per batch; 0: only the budget limits.
  int64_t max_sentences = 0;
  // Append EOS to the source (Marian, fairseq): the encoder sees where it ends.
  bool source_eos = true;
  int32_t pad_id = 0;
  int32_t bos_id = 2;
  int32_t eos_id = 3;
};

struct Batch {
  Tensor src;      // [B, Ts] f32 ids: x (+ EOS if source_eos), then pad_id
  Tensor tgt_in;   // [B, Tt] f32 ids: BOS + y, then pad_id (undefined for source-only)
  Tensor tgt_out;  // [B, Tt] f32 ids: y + EOS, then pad_id (the labels)
  std::vector<int64_t> src_lengths;  // [B] unpadded length of each src row (incl. EOS)
  std::vector<int64_t> tgt_lengths;  // [B] len(y) + 1 (empty for source-only)
  int64_t src_tokens = 0;            // sum of src_lengths
  int64_t tgt_tokens = 0;            // sum of tgt_lengths: the labels of the loss
  std::vector<int64_t> indices;      // [B] position of each row in the TokenizedCorpus

  int64_t size() const noexcept { return static_cast<int64_t>(indices.size()); }
};

// The batch of `indices` (rows in that order). Source-only corpora give no target
// tensors. IndexError for an index outside the corpus.
Batch make_batch(const TokenizedCorpus& corpus, std::span<const int64_t> indices,
                 const BatchOptions& options);

// Every pair in corpus order, cut by the budget (max_length is not applied: every input
// line must get an output). A pair wider than the budget forms a batch of its own.
std::vector<Batch> batches_in_order(const TokenizedCorpus& corpus, const BatchOptions& options);

// Where a BatchIterator stands: enough to reproduce every later batch. Plain integers,
// for checkpoints.
struct BatchPosition {
  uint64_t seed = 0;
  uint64_t epoch = 0;        // 0-based
  uint64_t index = 0;        // batches of this epoch already produced (== batches per
                             // epoch resumes at the start of the next epoch)
  uint64_t fingerprint = 0;  // hash of the kept pairs' ids and the options, checked on resume
};

// Endless training batches, epoch after epoch.
class BatchIterator {
 public:
  // Starts at epoch 0. Throws ConfigError for invalid options (naming the flag) or a
  // corpus without targets or without any pair within max_length.
  BatchIterator(std::shared_ptr<const TokenizedCorpus> corpus, const BatchOptions& options,
                uint64_t seed);
  // Resumes at `position`. ConfigError when its fingerprint does not match this corpus
  // and these options, or its index is past the end of an epoch.
  BatchIterator(std::shared_ptr<const TokenizedCorpus> corpus, const BatchOptions& options,
                const BatchPosition& position);

  // The next batch; after the last batch of an epoch comes the first of the next one.
  Batch next();
  // Position of the batch next() returns.
  BatchPosition position() const;
  // Epoch of the batch next() returns.
  uint64_t epoch() const noexcept { return epoch_; }
  // Batches per epoch (the same every epoch: the cuts depend only on the lengths).
  int64_t batches_per_epoch() const noexcept;
  // The reading stats with the pairs skipped for max_length added.
  const CorpusStats& stats() const noexcept { return stats_; }
  // The corpus indices of every batch of `epoch`, in the order they are produced.
  std::vector<std::vector<int64_t>> schedule(uint64_t epoch) const;

 private:
  void plan_epoch(uint64_t epoch);

  std::shared_ptr<const TokenizedCorpus> corpus_;
  BatchOptions options_;
  uint64_t seed_ = 0;
  uint64_t fingerprint_ = 0;
  CorpusStats stats_;
  std::vector<int64_t> kept_;                   // pairs within max_length, corpus order
  std::vector<std::vector<int64_t>> schedule_;  // the current epoch's batches
  uint64_t epoch_ = 0;
  uint64_t index_ = 0;
};

}  // namespace qkv::data
