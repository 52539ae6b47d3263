// The ordered chain (rank 0 -> 1 -> ... -> R-1 and back, in chunks so that the ranks and
// both directions of every link work at once), or one MPI_Allreduce.
#include "qkv/train/mpi_exchange.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "qkv/base/error.h"

namespace qkv::train {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  QKV_THROW(IoError, "MPI ", what, " failed: ", std::string(text, size_t(length)));
}

int as_count(size_t n) {
  QKV_CHECK(n <= size_t(INT_MAX), ValueError, "MPI message of ", n,
            " elements: more than MPI's int count allows");
  return int(n);
}

std::atomic<int> g_live{0};  // exchanges alive; the last one finalises MPI

class MpiExchange final : public GradientExchange {
 public:
  MpiExchange(ExchangeMode mode, size_t chunk) : mode_(mode), chunk_(chunk) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised == 0) {
      int provided = 0;
      // Only the main thread calls MPI (the pool's workers never do).
      QKV_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS,
                ConfigError, "--data-parallel mpi: MPI_Init failed; launch qkv with mpirun");
    }
    // Errors come back as codes (and become exceptions) instead of ending the process.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    int* bound = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bound, &found);
    if (found != 0 && bound != nullptr) tag_bound_ = *bound;
    ++g_live;
  }
  ~MpiExchange() override {
    if (--g_live == 0) {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (finalised == 0) MPI_Finalize();
    }
  }
  MpiExchange(const MpiExchange&) = delete;
  MpiExchange& operator=(const MpiExchange&) = delete;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  ExchangeMode mode() const noexcept override { return mode_; }

  void reduce(std::span<float> sum, std::span<const WeightedGradient> own) override {
    if (size_ == 1) {
      LocalExchange().reduce(sum, own);
      return;
    }
    if (mode_ == ExchangeMode::Allreduce) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, sum.data(), as_count(sum.size()), MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD),
                "Allreduce");
      return;
    }
    // Everything is here already: a chain whose every chunk is complete from the start.
    Chain chain(*this, sum, own, {});
    chain.all_ready();
    chain.wait();
  }

  void start_reduce(std::span<float> sum, std::span<const WeightedGradient> earlier,
                    WeightedGradient last) override {
    if (size_ == 1) return GradientExchange::start_reduce(sum, earlier, last);
    chain_.emplace(*this, sum, earlier, last);
  }
  void gradient_ready(size_t begin, size_t count) override {
    if (chain_) chain_->ready(begin, count);
  }
  void finish_reduce() override {
    if (size_ == 1) return GradientExchange::finish_reduce();
    QKV_CHECK(chain_.has_value(), InternalError, "finish_reduce without start_reduce");
    chain_->all_ready();
    chain_->wait();
    chain_.reset();
  }

  std::vector<double> gather(std::span<const double> mine) override {
    std::vector<double> all(mine.size() * size_t(size_));
    check_mpi(MPI_Allgather(mine.data(), as_count(mine.size()), MPI_DOUBLE, all.data(),
                            as_count(mine.size()), MPI_DOUBLE, MPI_COMM_WORLD),
              "Allgather");
    return all;
  }
  std::vector<uint64_t> gather(std::span<const uint64_t> mine) override {
    std::vector<uint64_t> all(mine.size() * size_t(size_));
    check_mpi(MPI_Allgather(mine.data(), as_count(mine.size()), MPI_UINT64_T, all.data(),
                            as_count(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD),
              "Allgather");
    return all;
  }
  int64_t max_over_ranks(int64_t value) override {
    int64_t out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD), "Allreduce");
    return out;
  }

 private:
  // One update's reduce, chunk by chunk. Ordered: the sum in rank order, identical
  // everywhere: forward, the running sum flows 0 -> 1 -> ... -> R-1 chunk by chunk, each
  // rank adding its micro-batches; backward, each finished chunk flows R-1 -> ... -> 0 over
  // the links' other direction while later chunks still go forward. Each link carries the
  // arena once per direction, so the exchange takes about one arena's transfer time plus
  // 2 chunk hops. Allreduce (overlapped only): one MPI_Iallreduce per chunk, posted
  // in descending chunk order on every rank (collectives must start in the same order
  // everywhere; the backward pass completes the arena roughly from its end).
  //
  // A rank works on chunk c once this rank's gradient of c is complete (ready()) and, on
  // ranks > 0 of the chain, the running sum of c has arrived. Progress happens inside the
  // calls (ready() tests the outstanding messages): only this thread calls MPI.
  class Chain {
   public:
    Chain(MpiExchange& mpi, std::span<float> sum, std::span<const WeightedGradient> earlier,
          std::optional<WeightedGradient> last)
        : mpi_(mpi),
          sum_(sum),
          earlier_(earlier.begin(), earlier.end()),
          last_(last),
          chunk_(mpi.chunk_for(sum.size())),
          chunks_((sum.size() + chunk_ - 1) / chunk_),
          missing_(chunks_),
          arrived_(chunks_, mpi.rank_ == 0),
          requests_(4 * chunks_, MPI_REQUEST_NULL),
          next_allreduce_(chunks_) {
      QKV_CHECK(2 * chunks_ + 1 < size_t(mpi.tag_bound_), ValueError, "gradient of ", sum.size(),
                " floats: more chunks than MPI tags allow");
      for (size_t c = 0; c < chunks_; ++c) missing_[c] = length(c);
      if (mpi.mode_ == ExchangeMode::Ordered && mpi.rank_ > 0)
        for (size_t c = 0; c < chunks_; ++c) post(kForwardRecv, c);
    }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;

    // [begin, begin + count) of this rank's last micro-batch's gradient is complete.
    void ready(size_t begin, size_t count) {
      const size_t end = std::min(begin + count, sum_.size());
      for (size_t c = begin / chunk_; begin < end; ++c) {
        const size_t stop = std::min(end, (c + 1) * chunk_);
        missing_[c] -= stop - begin;
        if (missing_[c] == 0) local_ready(c);
        begin = stop;
      }
      poll();
    }
    void all_ready() {
      for (size_t c = 0; c < chunks_; ++c)
        if (missing_[c] != 0) {
          missing_[c] = 0;
          local_ready(c);
        }
    }
    // Until every message of the update has gone and come.
    void wait() {
      while (true) {
        int index = MPI_UNDEFINED;
        check_mpi(MPI_Waitany(int(requests_.size()), requests_.data(), &index, MPI_STATUS_IGNORE),
                  "Waitany (gradient exchange)");
        if (index == MPI_UNDEFINED) break;  // every request done
        completed(size_t(index));
      }
    }

   private:
    enum Kind : size_t { kForwardRecv, kForwardSend, kBackwardRecv, kBackwardSend };

    size_t length(size_t c) const { return std::min(chunk_, sum_.size() - c * chunk_); }
    std::span<float> part(size_t c) const { return sum_.subspan(c * chunk_, length(c)); }

    void local_ready(size_t c) {
      const bool first = mpi_.rank_ == 0;
      if (mpi_.mode_ == ExchangeMode::Allreduce || first) {  // the sum so far is ours
        if (last_) add_weighted(part(c), last_->grad.subspan(c * chunk_, length(c)), last_->weight);
        if (mpi_.mode_ == ExchangeMode::Allreduce) return post_allreduces();
        return post(kForwardSend, c);
      }
      if (arrived_[c]) add_ours_and_pass_on(c);
    }

    // The sum of ranks < r has arrived and our gradient of c is complete.
    void add_ours_and_pass_on(size_t c) {
      const size_t begin = c * chunk_, n = length(c);
      for (const WeightedGradient& g : earlier_)
        add_weighted(part(c), g.grad.subspan(begin, n), g.weight);
      if (last_) add_weighted(part(c), last_->grad.subspan(begin, n), last_->weight);
      post(mpi_.rank_ == mpi_.size_ - 1 ? kBackwardSend : kForwardSend, c);
    }

    void post_allreduces() {
      while (next_allreduce_ > 0 && missing_[next_allreduce_ - 1] == 0) {
        const size_t c = --next_allreduce_;
        check_mpi(MPI_Iallreduce(MPI_IN_PLACE, part(c).data(), as_count(length(c)), MPI_FLOAT,
                                 MPI_SUM, MPI_COMM_WORLD, &requests_[c]),
                  "Iallreduce");
      }
    }

    // Chunk c travels with tag 2c (forward) or 2c + 1 (backward): completions come in any
    // order, so the tag, not the arrival order, says which chunk a message is.
    void post(Kind kind, size_t c) {
      float* data = part(c).data();
      const int n = as_count(length(c));
      const bool forward = kind == kForwardRecv || kind == kForwardSend;
      const int tag = int(2 * c + (forward ? 0 : 1));
      const int rank = mpi_.rank_;
      MPI_Request* request = &requests_[kind * chunks_ + c];
      switch (kind) {
        case kForwardRecv:
          return check_mpi(MPI_Irecv(data, n, MPI_FLOAT, rank - 1, tag, MPI_COMM_WORLD, request),
                           "Irecv (gradient chain)");
        case kForwardSend:
          return check_mpi(MPI_Isend(data, n, MPI_FLOAT, rank + 1, tag, MPI_COMM_WORLD, request),
                           "Isend (gradient chain)");
        case kBackwardRecv:
          return check_mpi(MPI_Irecv(data, n, MPI_FLOAT, rank + 1, tag, MPI_COMM_WORLD, request),
                           "Irecv (gradient chain)");
        case kBackwardSend:
          return check_mpi(MPI_Isend(data, n, MPI_FLOAT, rank - 1, tag, MPI_COMM_WORLD, request),
                           "Isend (gradient chain)");
      }
    }

    void completed(size_t index) {
      if (mpi_.mode_ == ExchangeMode::Allreduce) return;  // nothing follows an Iallreduce
      const auto kind = Kind(index / chunks_);
      const size_t c = index % chunks_;
      if (kind == kForwardRecv) {
        arrived_[c] = true;
        if (missing_[c] == 0) add_ours_and_pass_on(c);
      } else if (kind == kForwardSend) {  // sent on: the finished chunk comes back here
        post(kBackwardRecv, c);
      } else if (kind == kBackwardRecv && mpi_.rank_ > 0) {
        post(kBackwardSend, c);
      }
    }

    // Handles whatever has completed, without waiting (and lets MPI progress).
    void poll() {
      int count = 0;
      indices_.resize(requests_.size());
      check_mpi(MPI_Testsome(int(requests_.size()), requests_.data(), &count, indices_.data(),
                             MPI_STATUSES_IGNORE),
                "Testsome (gradient exchange)");
      if (count == MPI_UNDEFINED) return;
      for (int i = 0; i < count; ++i) completed(size_t(indices_[size_t(i)]));
    }

    MpiExchange& mpi_;
    std::span<float> sum_;
    std::vector<WeightedGradient> earlier_;
    std::optional<WeightedGradient> last_;
    size_t chunk_, chunks_;
    std::vector<size_t> missing_;  // per chunk: floats of our gradient not yet complete
    std::vector<bool> arrived_;    // per chunk: the running sum of the ranks before us is here
    std::vector<MPI_Request> requests_;
    std::vector<int> indices_;
    size_t next_allreduce_;  // chunks [next_allreduce_, chunks_) have their Iallreduce posted
  };

  // Floats per message of the chain for an arena of n floats (see kAutoChunk).
  size_t chunk_for(size_t n) const {
    if (chunk_ != kAutoChunk) return chunk_;
    constexpr size_t kMin = size_t{1} << 14, kMax = size_t{1} << 18;  // 64 KiB, 1 MiB
    size_t c = std::clamp(n / (8 * size_t(std::max(size_ - 1, 1))), kMin, kMax);
    // Few enough chunks for MPI's tags (two per chunk).
    return std::max(c, n / (size_t(tag_bound_) / 2 - 1) + 1);
  }

  std::optional<Chain> chain_;  // between start_reduce and finish_reduce
  ExchangeMode mode_;
  size_t chunk_;           // floats per message of the chain; kAutoChunk: chunk_for
  int tag_bound_ = 32767;  // MPI_TAG_UB, at least this
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::shared_ptr<GradientExchange> make_mpi_exchange(ExchangeMode mode, size_t chunk_floats) {
  return std::make_shared<MpiExchange>(mode, chunk_floats);
}

void abort_mpi_job(int code) noexcept {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised != 0 && finalised == 0) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace qkv::train
