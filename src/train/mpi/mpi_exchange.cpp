// The ordered chain (rank 0 -> 1 -> ... -> R-1 and back, in chunks so that the ranks and
// both directions of every link work at once), or one MPI_Allreduce.
#include "qkv/train/mpi_exchange.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
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
    ordered_reduce(sum, own);
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
  // The sum in rank order, identical everywhere: forward, the running sum flows
  // 0 -> 1 -> ... -> R-1 chunk by chunk, each rank adding its micro-batches; backward, each
  // finished chunk flows R-1 -> ... -> 0 over the links' other direction while later
  // chunks still go forward. Each link carries the arena once per direction, so the
  // exchange takes about one arena's transfer time plus 2 chunk hops.
  void ordered_reduce(std::span<float> sum, std::span<const WeightedGradient> own) {
    const size_t chunk = chunk_for(sum.size());
    const size_t chunks = (sum.size() + chunk - 1) / chunk;
    QKV_CHECK(2 * chunks + 1 < size_t(tag_bound_), ValueError, "gradient of ", sum.size(),
              " floats: more chunks than MPI tags allow");
    const bool first = rank_ == 0, last = rank_ == size_ - 1;
    enum Kind : size_t { kForwardRecv, kForwardSend, kBackwardRecv, kBackwardSend };
    std::vector<MPI_Request> requests(4 * chunks, MPI_REQUEST_NULL);
    // Chunk c travels with tag 2c (forward) or 2c + 1 (backward): completions come in any
    // order, so the tag, not the arrival order, says which chunk a message is.
    const auto post = [&](Kind kind, size_t c) {
      const size_t begin = c * chunk;
      const int n = as_count(std::min(chunk, sum.size() - begin));
      float* data = sum.data() + begin;
      const bool forward = kind == kForwardRecv || kind == kForwardSend;
      const int tag = int(2 * c + (forward ? 0 : 1));
      MPI_Request* request = &requests[kind * chunks + c];
      switch (kind) {
        case kForwardRecv:
          return check_mpi(MPI_Irecv(data, n, MPI_FLOAT, rank_ - 1, tag, MPI_COMM_WORLD, request),
                           "Irecv (gradient chain)");
        case kForwardSend:
          return check_mpi(MPI_Isend(data, n, MPI_FLOAT, rank_ + 1, tag, MPI_COMM_WORLD, request),
                           "Isend (gradient chain)");
        case kBackwardRecv:
          return check_mpi(MPI_Irecv(data, n, MPI_FLOAT, rank_ + 1, tag, MPI_COMM_WORLD, request),
                           "Irecv (gradient chain)");
        case kBackwardSend:
          return check_mpi(MPI_Isend(data, n, MPI_FLOAT, rank_ - 1, tag, MPI_COMM_WORLD, request),
                           "Isend (gradient chain)");
      }
    };
    for (size_t c = 0; c < chunks; ++c) post(first ? kForwardSend : kForwardRecv, c);
    while (true) {
      int index = MPI_UNDEFINED;
      check_mpi(MPI_Waitany(int(requests.size()), requests.data(), &index, MPI_STATUS_IGNORE),
                "Waitany (gradient chain)");
      if (index == MPI_UNDEFINED) break;  // every request done
      const auto kind = Kind(size_t(index) / chunks);
      const size_t c = size_t(index) % chunks;
      if (kind == kForwardRecv) {  // the sum of ranks < r: add ours, pass it on
        const size_t begin = c * chunk, n = std::min(chunk, sum.size() - begin);
        for (const WeightedGradient& g : own)
          add_weighted(sum.subspan(begin, n), g.grad.subspan(begin, n), g.weight);
        post(last ? kBackwardSend : kForwardSend, c);
      } else if (kind == kForwardSend) {  // sent on: the finished chunk comes back here
        post(kBackwardRecv, c);
      } else if (kind == kBackwardRecv && !first) {
        post(kBackwardSend, c);
      }
    }
  }

  // Floats per message of the chain for an arena of n floats (see kAutoChunk).
  size_t chunk_for(size_t n) const {
    if (chunk_ != kAutoChunk) return chunk_;
    constexpr size_t kMin = size_t{1} << 14, kMax = size_t{1} << 18;  // 64 KiB, 1 MiB
    size_t c = std::clamp(n / (8 * size_t(std::max(size_ - 1, 1))), kMin, kMax);
    // Few enough chunks for MPI's tags (two per chunk).
    return std::max(c, n / (size_t(tag_bound_) / 2 - 1) + 1);
  }

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
