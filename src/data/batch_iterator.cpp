// BatchIterator: the training schedule, a pure function of (corpus, options, seed,
// epoch), so a four-integer BatchPosition is a complete resume state.
#include <algorithm>
#include <utility>

#include "detail/batching.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/log.h"
#include "qkv/base/rng.h"
#include "qkv/base/sort_by_length.h"
#include "qkv/data/batcher.h"

namespace qkv::data {
namespace {

constexpr uint64_t kShuffleStream = uint64_t{0x62617463} << 32;  // "batc"

// FNV-1a, 64 bit: a stable hash across runs and platforms (std::hash is neither).
class Fnv1a {
 public:
  void add(uint64_t v) {
    for (int byte = 0; byte < 8; ++byte) {
      h_ ^= (v >> (8 * byte)) & 0xFF;
      h_ *= 0x100000001B3ULL;
    }
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xCBF29CE484222325ULL;
};

uint64_t fingerprint(const TokenizedCorpus& corpus, std::span<const int64_t> kept,
                     const BatchOptions& o) {
  Fnv1a h;
  for (int64_t v : {o.mini_batch_words, o.max_length, o.max_sentences, int64_t{o.source_eos},
                    int64_t{o.pad_id}, int64_t{o.bos_id}, int64_t{o.eos_id}})
    h.add(static_cast<uint64_t>(v));
  h.add(kept.size());
  for (int64_t i : kept) {
    for (const auto* side : {&corpus.source[size_t(i)], &corpus.target[size_t(i)]}) {
      h.add(side->size());
      for (int32_t id : *side) h.add(static_cast<uint32_t>(id));
    }
  }
  return h.value();
}

// Fisher-Yates with qkv's Rng: the permutation depends only on the Rng's state.
template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.uniform_int(i)]);
}

}  // namespace

BatchIterator::BatchIterator(std::shared_ptr<const TokenizedCorpus> corpus,
                             const BatchOptions& options, uint64_t seed)
    : corpus_(std::move(corpus)), options_(options), seed_(seed) {
  QKV_CHECK(corpus_ != nullptr, ValueError, "BatchIterator: no corpus");
  detail::check_batch_options(options_, /*training=*/true);
  const TokenizedCorpus& c = *corpus_;
  QKV_CHECK(c.target.size() == c.source.size(), ConfigError,
            "training batches need targets: ", c.source.size(), " source but ", c.target.size(),
            " target sentences");
  stats_ = c.stats;
  stats_.max_length = options_.max_length;
  for (size_t i = 0; i < c.source.size(); ++i) {
    const auto longest = static_cast<int64_t>(std::max(c.source[i].size(), c.target[i].size()));
    if (longest <= options_.max_length) {
      kept_.push_back(static_cast<int64_t>(i));
    } else {
      ++stats_.skipped_max_length;
      --stats_.kept;
    }
  }
  QKV_CHECK(!kept_.empty(), FieldError, "no training pair left: ", stats_.describe(),
            "; raise {max_length} or check the training files");
  if (stats_.skipped_max_length > 0) log(LogLevel::Warning, "training data: ", stats_.describe());
  fingerprint_ = fingerprint(c, kept_, options_);
  plan_epoch(0);
}

BatchIterator::BatchIterator(std::shared_ptr<const TokenizedCorpus> corpus,
                             const BatchOptions& options, const BatchPosition& position)
    : BatchIterator(std::move(corpus), options, position.seed) {
  QKV_CHECK(position.fingerprint == fingerprint_, FieldError,
            "cannot resume: the saved data position belongs to other training data or batch "
            "options (fingerprint ",
            position.fingerprint, ", now ", fingerprint_,
            "); resume with the same training files, vocabulary, {mini_batch_words}, "
            "{max_sentences} and {max_length}");
  QKV_CHECK(position.index <= schedule_.size(), ConfigError, "cannot resume: batch ",
            position.index, " of an epoch with ", schedule_.size(), " batches");
  if (position.epoch != 0) plan_epoch(position.epoch);
  index_ = position.index;
  if (index_ == schedule_.size()) plan_epoch(epoch_ + 1);
}

std::vector<std::vector<int64_t>> BatchIterator::schedule(uint64_t epoch) const {
  std::vector<int64_t> order = kept_;
  // One generator per epoch: epoch e's batches do not depend on how far e-1 got. The
  // stream tag keeps them apart from other users of the same seed (weight init).
  Rng rng(seed_, kShuffleStream + epoch);
  shuffle(order, rng);
  const TokenizedCorpus& c = *corpus_;
  sort_by_length(order, [&](int64_t i) {
    return std::pair(c.target[size_t(i)].size(), c.source[size_t(i)].size());
  });
  std::vector<std::vector<int64_t>> batches = detail::cut_by_budget(c, order, options_);
  shuffle(batches, rng);
  return batches;
}

void BatchIterator::plan_epoch(uint64_t epoch) {
  schedule_ = schedule(epoch);
  epoch_ = epoch;
  index_ = 0;
}

Batch BatchIterator::next() {
  Batch batch = make_batch(*corpus_, schedule_[index_++], options_);
  // Roll over now, so position() and epoch() always name the batch next() returns.
  if (index_ == schedule_.size()) plan_epoch(epoch_ + 1);
  return batch;
}

BatchPosition BatchIterator::position() const {
  return {.seed = seed_, .epoch = epoch_, .index = index_, .fingerprint = fingerprint_};
}

int64_t BatchIterator::batches_per_epoch() const noexcept {
  return static_cast<int64_t>(schedule_.size());
}

}  // namespace qkv::data
