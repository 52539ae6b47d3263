// A user's data-parallel trainer links qkv::train_mpi: the exchange a Trainer takes
// (TrainerOptions::exchange). Started by mpirun, it reports its rank; alone, it says so.
#include <cstdio>
#include <cstdlib>

#include "qkv/train/mpi_exchange.h"

int main() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) {
    std::printf("not started by mpirun: nothing to exchange\n");
    return 0;
  }
  const auto exchange = qkv::train::make_mpi_exchange(qkv::train::ExchangeMode::Ordered);
  std::printf("rank %d of %d\n", exchange->rank(), exchange->size());
  return 0;
}
