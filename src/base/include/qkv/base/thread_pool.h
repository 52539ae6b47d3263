// The one process-wide thread pool.
//
// parallel_for splits [begin, end) into chunks of exactly `grain` indices (the last
// one shorter). The chunking depends only on (begin, end, grain), never on the number
// of threads, so any computation whose per-chunk work is independent -- or whose
// per-chunk partial results are combined in chunk order -- gives bitwise identical
// results for 1, 2 or 64 threads.
//
// BLAS runs single-threaded (kernels/gemm sets that up) and large GEMMs are split over
// this pool instead, so BLAS threads never compete with ours.
#pragma once

#include <cstdint>

#include "qkv/base/function_ref.h"

namespace qkv {

using ChunkFn = FunctionRef<void(int64_t chunk_begin, int64_t chunk_end)>;

// Number of threads in the global pool (>= 1), including the calling thread. Creating
// the pool reads QKV_NUM_THREADS; a malformed value raises ConfigError.
int num_threads();

// Resizes the global pool. n in [1, kMaxThreads]; throws ConfigError otherwise. Not to be
// called while a parallel_for is running. Initial size: QKV_NUM_THREADS if set (a
// malformed value raises ConfigError naming the variable), else the hardware's.
void set_num_threads(int n);
inline constexpr int kMaxThreads = 256;

// Runs fn(chunk_begin, chunk_end) for every chunk of [begin, end), on the pool's
// threads and the caller's. grain must be >= 1. Blocks until all chunks are done.
// If fn throws, the remaining chunks are skipped and the first exception is rethrown
// here. Nested calls (from inside a chunk) and calls from a second thread while the
// pool is busy run serially on the calling thread, over the same chunks.
void parallel_for(int64_t begin, int64_t end, int64_t grain, ChunkFn fn);

// Number of chunks parallel_for(begin, end, grain, ...) runs.
constexpr int64_t num_chunks(int64_t begin, int64_t end, int64_t grain) noexcept {
  return end <= begin ? 0 : (end - begin + grain - 1) / grain;
}

// True on a thread currently running a parallel_for chunk.
bool in_parallel_region() noexcept;

}  // namespace qkv
