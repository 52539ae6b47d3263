// What the trainer needs from other processes in a data-parallel run, behind one small
// interface: the single-process implementation (LocalExchange) here, the MPI one in
// qkv/train/mpi_exchange.h (a separate target, built only where CMake finds MPI).
//
// An update is M = ranks × accumulate micro-batches, numbered j = 0..M-1 in the order the
// batch stream produces them; rank r computes micro-batches [r·N, (r+1)·N) (N = accumulate).
// Its gradient is defined as
//
//   G = Σ_j w_j · g_j,  w_j = float(T_j / T),  summed in j order into a float32 accumulator
//                                                that starts at +0 (add_weighted below)
//
// with g_j the gradient of micro-batch j's mean loss per target token and T_j its target
// tokens (T their sum over the update): the gradient of the mean loss per target token of
// the whole update, exactly the same float operations whatever the number of ranks. So R
// ranks × N micro-batches give bitwise the parameters of 1 rank × R·N micro-batches.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace qkv::train {

// One micro-batch's gradient and its weight T_j / T.
struct WeightedGradient {
  std::span<const float> grad;
  float weight = 1;
};

// sum[i] += weight · grad[i]: the one definition of the update's arithmetic.
void add_weighted(std::span<float> sum, std::span<const float> grad, float weight);

// How the ranks' gradients are combined.
enum class ExchangeMode {
  // A chain over ranks in rank order (pipelined in chunks), then a broadcast: the sum of
  // the definition above, bitwise independent of the number of ranks.
  Ordered,
  // Each rank sums its own micro-batches, then MPI_Allreduce: one collective, but its
  // summation order depends on the number of ranks (and on Open MPI's algorithm), so
  // results are reproducible for a fixed R only, not across R.
  Allreduce,
};

class GradientExchange {
 public:
  virtual ~GradientExchange() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  virtual ExchangeMode mode() const noexcept = 0;

  // Whether this rank may sum its own micro-batches as they come (no copy of each
  // gradient): true on rank 0 (its sum starts the chain) and in Allreduce mode.
  bool sums_as_it_goes() const noexcept { return rank() == 0 || mode() == ExchangeMode::Allreduce; }
  // Completes the update's gradient into `sum`, identical on every rank. Where
  // sums_as_it_goes(), `sum` enters holding this rank's micro-batches already summed (from
  // +0, in order, with add_weighted) and `own` is empty; elsewhere `own` lists this rank's
  // micro-batches in order and `sum`'s contents on entry are ignored.
  virtual void reduce(std::span<float> sum, std::span<const WeightedGradient> own) = 0;

  // The same reduce in three steps, so that it overlaps the backward pass of this rank's
  // last micro-batch (PyTorch's DDP sends its gradient buckets the same way):
  // start_reduce() before that micro-batch's backward, with `sum` and `earlier` as reduce()
  // takes them for the micro-batches before it, and `last` the gradient it fills in;
  // gradient_ready() for each region [begin, begin + count) of `last` as soon as it is
  // complete (disjoint regions, in any order; the exchange may add and send them at once
  // and never reads a region before); finish_reduce() after the backward pass (every region
  // counts as complete then). `sum` ends bitwise as reduce() would leave it: each float
  // sees the same additions in the same order, only earlier. The default does the whole
  // reduce() in finish_reduce().
  virtual void start_reduce(std::span<float> sum, std::span<const WeightedGradient> earlier,
                            WeightedGradient last);
  virtual void gradient_ready(size_t begin, size_t count);
  virtual void finish_reduce();

  // Every rank's `mine` (the same count on each), concatenated in rank order.
  virtual std::vector<double> gather(std::span<const double> mine) = 0;
  virtual std::vector<uint64_t> gather(std::span<const uint64_t> mine) = 0;
  // The largest of every rank's `value`.
  virtual int64_t max_over_ranks(int64_t value) = 0;

 private:
  // What the default start_reduce() keeps for finish_reduce().
  std::span<float> pending_sum_;
  std::vector<WeightedGradient> pending_own_;
};

// One process: reduce() adds `own` to +0 in order; gather() returns `mine`.
class LocalExchange final : public GradientExchange {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  ExchangeMode mode() const noexcept override { return ExchangeMode::Ordered; }
  void reduce(std::span<float> sum, std::span<const WeightedGradient> own) override;
  std::vector<double> gather(std::span<const double> mine) override;
  std::vector<uint64_t> gather(std::span<const uint64_t> mine) override;
  int64_t max_over_ranks(int64_t value) override { return value; }
};

// What must be identical on every rank for the ranks to train one model: a name ("the
// training corpus", "the flags"; option fields marked as {field}, qkv/base/field_error.h)
// and a hash of it.
struct FingerprintItem {
  std::string what;
  uint64_t hash = 0;
};

// Gathers every rank's items and throws FieldError (a ConfigError) naming the first item
// and the rank where it differs from rank 0's (every rank throws the same error, so none
// waits for the others). `items` must list the same names in the same order on every
// rank.
void check_same_run(GradientExchange& exchange, std::span<const FingerprintItem> items);

// The number of processes a launcher started with this one: mpirun's OMPI_COMM_WORLD_SIZE,
// or a PMI launcher's PMI_SIZE / PMIX_SIZE; 0 when none did.
int launcher_world_size();

// Whether a process trains with others (`--data-parallel`): always for Mpi; for Auto when
// a launcher started more than one process. FieldError naming {data_parallel} for Off
// under a launcher with several processes: each would train the same model into the same
// directory.
enum class DataParallel { Auto, Off, Mpi };
bool trains_with_others(DataParallel mode, int launcher_world_size);

}  // namespace qkv::train
