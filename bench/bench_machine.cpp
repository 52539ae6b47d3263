// Machine limits, measured in the same run as the kernels so the table has context:
//   BM_StreamTriad  a[i] = b[i] + s·c[i] over 3 × 512 MiB (far beyond any LLC),
//                   bytes counted as STREAM does (2 reads + 1 write per element);
//   BM_Memcpy       memcpy of 512 MiB (1 read + 1 write per byte);
//   BM_FmaPeak      a register-only FMA loop: the arithmetic ceiling for GEMM;
//   BM_ParallelForOverhead  latency of one qkv::parallel_for over 2 trivial chunks: the
//                   fixed cost every short kernel pays for using the pool.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include "bench_util.h"

namespace qkv::bench {
namespace {

constexpr int64_t kStreamFloats = int64_t{1} << 27;  // 512 MiB per array
constexpr int64_t kGrain = int64_t{1} << 20;         // 4 MiB per parallel chunk

void BM_StreamTriad(benchmark::State& state) {
  float* a = buffer(30, kStreamFloats);
  const float *b = buffer(31, kStreamFloats), *c = buffer(32, kStreamFloats);
  use_threads(state, 0);
  for (auto _ : state) {
    parallel_for(0, kStreamFloats, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 0.5f * c[i];
    });
    benchmark::ClobberMemory();
  }
  set_gbps(state, 3.0 * sizeof(float) * double(kStreamFloats));
}

void BM_Memcpy(benchmark::State& state) {
  float* dst = buffer(30, kStreamFloats);
  const float* src = buffer(31, kStreamFloats);
  use_threads(state, 0);
  for (auto _ : state) {
    parallel_for(0, kStreamFloats, kGrain, [&](int64_t lo, int64_t hi) {
      std::memcpy(dst + lo, src + lo, size_t(hi - lo) * sizeof(float));
    });
    benchmark::ClobberMemory();
  }
  set_gbps(state, 2.0 * sizeof(float) * double(kStreamFloats));
}

// Independent accumulator chains per target: FMA latency (4 cycles on Intel, 5 on AMD
// Zen) x 2 FMA ports needs >= 10 in flight. Every chain plus the two constants must stay
// in a register, or the loop measures stack loads and stores instead of FMAs: with 16
// chains on AVX2 (16 ymm registers) GCC spilled and this machine (Zen, true peak ~92
// GFLOP/s per core) reported 52, so the tables printed "134 % of FMA peak". AVX-512 has
// 32 zmm registers: 16 chains fit with slack. Returns a value so the loop cannot be removed.
constexpr int kChainsAvx512 = 16, kChainsAvx2 = 10;
constexpr int kConstantRegisters = 2;  // x and y below
static_assert(kChainsAvx512 + kConstantRegisters <= 32, "AVX-512 chains must fit 32 zmm");
static_assert(kChainsAvx2 + kConstantRegisters <= 16, "AVX2 chains must fit 16 ymm");
static_assert(kChainsAvx2 >= 10, "too few AVX2 chains to cover FMA latency x throughput");
constexpr int64_t kFmaSteps = int64_t{1} << 22;

__attribute__((target("avx512f"))) float fma_loop_avx512() {
  __m512 acc[kChainsAvx512];
  for (int i = 0; i < kChainsAvx512; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t s = 0; s < kFmaSteps; ++s)
#pragma GCC unroll 16
    for (int i = 0; i < kChainsAvx512; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  __m512 sum = acc[0];
  for (int i = 1; i < kChainsAvx512; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float out[16];  // not _mm512_reduce_add_ps: trips GCC 12's -Wuninitialized
  _mm512_store_ps(out, sum);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2() {
  __m256 acc[kChainsAvx2];
  for (int i = 0; i < kChainsAvx2; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t s = 0; s < kFmaSteps; ++s)
#pragma GCC unroll 10
    for (int i = 0; i < kChainsAvx2; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  alignas(32) float out[8];
  __m256 sum = acc[0];
  for (int i = 1; i < kChainsAvx2; ++i) sum = _mm256_add_ps(sum, acc[i]);
  _mm256_store_ps(out, sum);
  return out[0] + out[7];
}

// The FMA loop of one target on `threads` threads of qkv's pool.
void run_fma_peak(benchmark::State& state, bool avx512) {
  const int threads = use_threads(state, 0);
  if (!avx512 && !__builtin_cpu_supports("fma")) {
    state.SkipWithError("no FMA on this CPU");
    return;
  }
  const int lanes = avx512 ? 16 : 8, chains = avx512 ? kChainsAvx512 : kChainsAvx2;
  for (auto _ : state) {
    parallel_for(0, threads, 1, [&](int64_t, int64_t) {
      benchmark::DoNotOptimize(avx512 ? fma_loop_avx512() : fma_loop_avx2());
    });
  }
  state.SetLabel(avx512 ? "avx512" : "avx2");
  set_gflops(state, 2.0 * lanes * chains * double(kFmaSteps) * threads);
}

// The machine's peak: the widest target it has.
void BM_FmaPeak(benchmark::State& state) {
  run_fma_peak(state, __builtin_cpu_supports("avx512f"));
}

// The AVX2 loop also on AVX-512 machines, so its register budget is checked there too:
// on Zen 4 both should reach the same GFLOP/s (its AVX-512 FMAs are double-pumped 256-bit).
void BM_FmaPeakAvx2(benchmark::State& state) {
  run_fma_peak(state, false);
}

// Args: threads, gap_us. Times one parallel_for(0, 2, 1, trivial) call. threads:1 runs
// both chunks on the caller (the floor: no hand-off); threads:2 hands one chunk to a
// worker and waits for it. gap_us:0 calls back to back, so the worker is still spinning
// (the pool spins ~50 us before sleeping); gap_us:200 busy-waits 200 us between calls
// (outside the timed region), so the worker has gone to sleep and each call pays a
// kernel wake-up -- a training step whose kernels are separated by other work.
void BM_ParallelForOverhead(benchmark::State& state) {
  use_threads(state, 0);
  const auto gap = std::chrono::microseconds(state.range(1));
  using Clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    parallel_for(0, 2, 1, [](int64_t lo, int64_t hi) { benchmark::DoNotOptimize(lo + hi); });
    const auto t1 = Clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    if (gap.count() > 0)
      while (Clock::now() - t1 < gap) {
      }
  }
}

void Threads(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_StreamTriad)->Apply(Threads);
BENCHMARK(BM_Memcpy)->Apply(Threads);
BENCHMARK(BM_FmaPeak)->Apply(Threads);
BENCHMARK(BM_FmaPeakAvx2)->Apply(Threads);
// Manual time counts only the calls, so with a gap the iteration count is fixed
// (2000 × 200 us ≈ 0.4 s); the automatic count would aim at 0.2 s of call time.
BENCHMARK(BM_ParallelForOverhead)
    ->ArgNames({"threads", "gap_us"})
    ->ArgsProduct({{1, 2}, {0}})
    ->UseManualTime()
    ->Unit(benchmark::kNanosecond);
BENCHMARK(BM_ParallelForOverhead)
    ->ArgNames({"threads", "gap_us"})
    ->ArgsProduct({{1, 2}, {200}})
    ->Iterations(2000)
    ->UseManualTime()
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace qkv::bench
