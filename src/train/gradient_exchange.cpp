// The single-process exchange and the start-up check that every rank trains the same run.
#include "qkv/train/gradient_exchange.h"

#include <algorithm>
#include <cstdlib>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv::train {

void add_weighted(std::span<float> sum, std::span<const float> grad, float weight) {
  QKV_CHECK(sum.size() == grad.size(), ShapeError, "add_weighted: ", sum.size(), " vs ",
            grad.size(), " elements");
  float* __restrict s = sum.data();
  const float* __restrict g = grad.data();
  const size_t n = sum.size();
  for (size_t i = 0; i < n; ++i) s[i] += weight * g[i];
}

void LocalExchange::reduce(std::span<float> sum, std::span<const WeightedGradient> own) {
  if (own.empty()) return;  // rank 0 summed as it went: the sum is complete
  std::fill(sum.begin(), sum.end(), 0.0f);
  for (const WeightedGradient& g : own) add_weighted(sum, g.grad, g.weight);
}

void GradientExchange::start_reduce(std::span<float> sum, std::span<const WeightedGradient> earlier,
                                    WeightedGradient last) {
  pending_sum_ = sum;
  pending_own_.assign(earlier.begin(), earlier.end());
  pending_own_.push_back(last);
}

void GradientExchange::gradient_ready(size_t /*begin*/, size_t /*count*/) {}

void GradientExchange::finish_reduce() {
  std::vector<WeightedGradient> own;
  own.swap(pending_own_);
  if (sums_as_it_goes()) {  // the sum so far is in pending_sum_: add the last one, reduce
    add_weighted(pending_sum_, own.back().grad, own.back().weight);
    own.clear();
  }
  reduce(pending_sum_, own);
}

std::vector<double> LocalExchange::gather(std::span<const double> mine) {
  return {mine.begin(), mine.end()};
}
std::vector<uint64_t> LocalExchange::gather(std::span<const uint64_t> mine) {
  return {mine.begin(), mine.end()};
}

void check_same_run(GradientExchange& exchange, std::span<const FingerprintItem> items) {
  if (exchange.size() <= 1) return;
  std::vector<uint64_t> mine;
  mine.push_back(items.size());
  for (const FingerprintItem& item : items) mine.push_back(item.hash);
  // Every rank sends as many numbers; a rank with another item count differs in the first.
  const std::vector<uint64_t> all = exchange.gather(std::span<const uint64_t>(mine));
  const size_t n = mine.size();
  for (int r = 1; r < exchange.size(); ++r) {
    const uint64_t* theirs = all.data() + size_t(r) * n;
    QKV_CHECK(theirs[0] == all[0], ConfigError, "data-parallel start-up: rank ", r, " checks ",
              theirs[0], " fingerprints but rank 0 ", all[0],
              " (different qkv builds?); run the same qkv binary on every node");
    for (size_t i = 0; i < items.size(); ++i)
      QKV_CHECK(theirs[i + 1] == all[i + 1], FieldError, "data-parallel start-up: ", items[i].what,
                " of rank ", r, " differs from rank 0's (fingerprint ", theirs[i + 1], " vs ",
                all[i + 1],
                "); every rank must run the same flags on the same corpora, vocabulary and "
                "checkpoint");
  }
}

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* text = std::getenv(name)) return std::atoi(text);
  return 0;
}

bool trains_with_others(DataParallel mode, int world) {
  QKV_CHECK(mode != DataParallel::Off || world <= 1, FieldError, "mpirun started ", world,
            " ranks but {data_parallel} is off: each would train the same model into the same "
            "directory; drop {data_parallel} off, or run without mpirun");
  return mode == DataParallel::Mpi || (mode == DataParallel::Auto && world > 1);
}

}  // namespace qkv::train
