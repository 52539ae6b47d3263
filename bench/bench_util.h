// Shared helpers for the kernel benchmarks: big reusable buffers, thread-count setup,
// and the GFLOP/s and GB/s counters.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>

#include "qkv/base/aligned.h"
#include "qkv/base/thread_pool.h"

namespace qkv::bench {

// A 64-byte aligned float buffer filled with a deterministic pattern in [-1, 1),
// allocated once per (slot, size) and reused across benchmarks so allocation and
// first-touch page faults stay out of the timings.
float* buffer(int slot, int64_t count);

// Sets qkv's pool to state.range(idx) threads.
inline int use_threads(benchmark::State& state, int idx) {
  const int t = static_cast<int>(state.range(idx));
  set_num_threads(t);
  return t;
}

// GFLOP/s from floating-point operations per iteration (rate over the benchmark time).
inline void set_gflops(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iter / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// GB/s from bytes read + written per iteration (each byte counted once).
inline void set_gbps(benchmark::State& state, double bytes_per_iter) {
  state.counters["GB/s"] =
      benchmark::Counter(bytes_per_iter / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace qkv::bench
