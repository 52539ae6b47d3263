// The GradientExchange over MPI (Open MPI from Debian; launched with mpirun). A target of
// its own, qkv_train_mpi, built only where CMake finds MPI, so the trainer and every
// other front end build and run without it.
#pragma once

#include <cstddef>
#include <memory>

#include "qkv/train/gradient_exchange.h"

namespace qkv::train {

// Floats per message of the ordered chain; 0 chooses per exchange: about an eighth of the
// arena over (ranks - 1), within [64 KiB, 1 MiB] — small enough that the pipeline fills
// fast (an exchange costs about one arena's transfer plus 2 (ranks - 1) chunk hops),
// large enough that per-message costs stay small. Results never depend on it.
inline constexpr size_t kAutoChunk = 0;

// Initialises MPI (once per process; MPI_Finalize when the last exchange made here is
// destroyed) and returns the exchange over MPI_COMM_WORLD. ConfigError when MPI cannot
// start.
std::shared_ptr<GradientExchange> make_mpi_exchange(ExchangeMode mode,
                                                    size_t chunk_floats = kAutoChunk);

// Ends every rank of the job at once (MPI_Abort with `code`): what a rank does when it
// fails on its own (a full disk on rank 0, a corrupt file), so that the others do not
// wait for it forever. Does nothing when MPI was not initialised.
void abort_mpi_job(int code) noexcept;

}  // namespace qkv::train
