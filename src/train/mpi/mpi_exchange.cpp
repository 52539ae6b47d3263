// The ordered chain (rank 0 -> 1 -> ... -> R-1, in chunks so the ranks work on different
// chunks at once) followed by a broadcast from the last rank; or one MPI_Allreduce.
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

// Floats per message of the chain: small enough that the next rank starts on a chunk
// while this one adds the following, large enough that per-message costs stay small.
constexpr size_t kChunk = size_t{1} << 18;  // 1 MiB

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
  explicit MpiExchange(ExchangeMode mode) : mode_(mode) {
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
    // Chain: receive the running sum of ranks < r chunk by chunk, add this rank's
    // micro-batches in order, pass it on. Rank 0 starts it with its own sum.
    std::vector<MPI_Request> sent;
    for (size_t begin = 0; begin < sum.size(); begin += kChunk) {
      const size_t n = std::min(kChunk, sum.size() - begin);
      const std::span<float> chunk = sum.subspan(begin, n);
      if (rank_ > 0) {
        check_mpi(MPI_Recv(chunk.data(), as_count(n), MPI_FLOAT, rank_ - 1, kChainTag,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "Recv (gradient chain)");
        for (const WeightedGradient& g : own)
          add_weighted(chunk, g.grad.subspan(begin, n), g.weight);
      }
      if (rank_ + 1 < size_) {
        sent.emplace_back();
        check_mpi(MPI_Isend(chunk.data(), as_count(n), MPI_FLOAT, rank_ + 1, kChainTag,
                            MPI_COMM_WORLD, &sent.back()),
                  "Isend (gradient chain)");
      }
    }
    if (!sent.empty())
      check_mpi(MPI_Waitall(int(sent.size()), sent.data(), MPI_STATUSES_IGNORE), "Waitall");
    // The last rank holds the whole sum; a broadcast copies it, bit for bit.
    check_mpi(MPI_Bcast(sum.data(), as_count(sum.size()), MPI_FLOAT, size_ - 1, MPI_COMM_WORLD),
              "Bcast (gradient)");
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
  static constexpr int kChainTag = 17;
  ExchangeMode mode_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::shared_ptr<GradientExchange> make_mpi_exchange(ExchangeMode mode) {
  return std::make_shared<MpiExchange>(mode);
}

void abort_mpi_job(int code) noexcept {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised != 0 && finalised == 0) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace qkv::train
