// GEMM: qkv's gemm() (OpenBLAS single-threaded, blocks over qkv's pool) against raw
// OpenBLAS with its own threads, and qkv's portable SIMD GEMM. GFLOP/s = 2·m·n·k / s.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>

#include "bench_util.h"
#include "qkv/kernels/gemm.h"

namespace qkv::bench {
namespace {

kernels::GemmSpec spec_for(const benchmark::State& state) {
  kernels::GemmSpec s;
  s.m = state.range(0), s.n = state.range(1), s.k = state.range(2);
  s.lda = s.k, s.ldb = s.n, s.ldc = s.n;
  return s;
}

// Raw OpenBLAS, threaded by OpenBLAS itself (the baseline qkv's gemm must match).
void BM_OpenBlasSgemm(benchmark::State& state) {
  const kernels::GemmSpec s = spec_for(state);
  const float *a = buffer(0, s.m * s.k), *b = buffer(1, s.k * s.n);
  float* c = buffer(2, s.m * s.n);
  openblas_set_num_threads(static_cast<int>(state.range(3)));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.m), int(s.n), int(s.k), 1.0f, a,
                int(s.lda), b, int(s.ldb), 0.0f, c, int(s.ldc));
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);  // qkv's gemm relies on a single-threaded OpenBLAS
  set_gflops(state, 2.0 * double(s.m) * double(s.n) * double(s.k));
}

template <void (*Gemm)(const kernels::GemmSpec&, const float*, const float*, float*) noexcept>
void BM_Qkv(benchmark::State& state) {
  const kernels::GemmSpec s = spec_for(state);
  const float *a = buffer(0, s.m * s.k), *b = buffer(1, s.k * s.n);
  float* c = buffer(2, s.m * s.n);
  use_threads(state, 3);
  for (auto _ : state) {
    Gemm(s, a, b, c);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * double(s.m) * double(s.n) * double(s.k));
}

// Args: m, n, k, threads. Square sizes, then a transformer projection: 4096 tokens
// (e.g. batch 32 × 128) times a fused QKV weight, d_model 512 -> 3·512.
void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "threads"});
  for (int64_t t : {1, 2}) {
    for (int64_t s : {256, 512, 1024, 2048}) b->Args({s, s, s, t});
    b->Args({4096, 1536, 512, t});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_OpenBlasSgemm)->Apply(Shapes);
// gemm() with its backend pinned to OpenBLAS: the wrapper's cost (fixed blocks over
// qkv's pool, single-threaded OpenBLAS per block) against raw, OpenBLAS-threaded sgemm.
void BM_QkvGemmOpenBlas(benchmark::State& state) {
  kernels::set_gemm_backend(kernels::GemmBackend::OpenBlas);
  BM_Qkv<&kernels::gemm>(state);
  kernels::set_gemm_backend(kernels::GemmBackend::Auto);
}

// gemm() as users get it (Auto backend; the context line says which one).
BENCHMARK(BM_Qkv<&kernels::gemm>)->Name("BM_QkvGemm")->Apply(Shapes);
BENCHMARK(BM_QkvGemmOpenBlas)->Apply(Shapes);
BENCHMARK(BM_Qkv<&kernels::gemm_portable>)->Name("BM_QkvGemmPortable")->Apply(Shapes);

}  // namespace
}  // namespace qkv::bench
