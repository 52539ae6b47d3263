// GEMM: qkv's gemm() (OpenBLAS single-threaded in blocks over qkv's pool, or qkv's own
// gemm_portable: gemm.h says which on which CPU) against raw OpenBLAS with its own
// threads, and each backend pinned. GFLOP/s = 2·m·n·k / s.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>
#include <utility>

#include "bench_util.h"
#include "qkv/kernels/gemm.h"
#include "qkv/kernels/packed_gemm.h"

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

using GemmFn = void (*)(const kernels::GemmSpec&, const float*, const float*, float*) noexcept;

// Times gemm(s) on qkv's pool with state.range(threads_arg) threads.
void time_gemm(benchmark::State& state, GemmFn gemm, const kernels::GemmSpec& s, int threads_arg) {
  const float *a = buffer(0, s.m * s.k), *b = buffer(1, s.k * s.n);
  float* c = buffer(2, s.m * s.n);
  use_threads(state, threads_arg);
  for (auto _ : state) {
    gemm(s, a, b, c);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * double(s.m) * double(s.n) * double(s.k));
}

template <GemmFn Gemm>
void BM_Qkv(benchmark::State& state) {
  time_gemm(state, Gemm, spec_for(state), 3);
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

// Decoding's products: a few rows (batch x beam) times a weight W [n, k] used as Wᵀ, here
// the tied output projection of `qkv train`'s default Transformer (n 8000, k 256).
// gemm() as decoding ran it before PackedWeightsScope (OpenBLAS repacks W every call),
// against gemm_packed on W packed once (packing not timed: once per decoded batch).
void DecodeShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "threads"});
  for (int64_t t : {1, 2})
    for (int64_t m : {4, 32, 128}) b->Args({m, 8000, 256, t});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void BM_DecodeProjectionGemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  time_gemm(state, &kernels::gemm, {false, true, m, n, k, 1.0, 0.0, k, k, n}, 3);
}

void BM_DecodeProjectionPacked(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const float *a = buffer(0, m * k), *w = buffer(1, n * k);
  float* packed = buffer(3, kernels::packed_transposed_size(n, k));
  float* c = buffer(2, m * n);
  kernels::pack_transposed(w, n, k, k, packed);
  use_threads(state, 3);
  for (auto _ : state) {
    kernels::gemm_packed(a, m, k, k, packed, n, c, n);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * double(m) * double(n) * double(k));
}

// The Transformer update's products (bench/run_training.sh: ~6,500 rows, d 256, FFN 1024),
// as gemm() gets them: forward x·Wᵀ, dX = dY·W, dW = dYᵀ·X. Args: m, n, k, trans_a,
// trans_b, threads (operands stored as the flags say).
void TrainingShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "ta", "tb", "threads"});
  constexpr int64_t kRows = 6500;
  for (int64_t t : {1, 2})
    for (const auto& [in, out] : {std::pair<int64_t, int64_t>{256, 1024}, {1024, 256}}) {
      b->Args({kRows, out, in, 0, 1, t});  // forward
      b->Args({kRows, in, out, 0, 0, t});  // dX
      b->Args({out, in, kRows, 1, 0, t});  // dW
    }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

kernels::GemmSpec training_spec(const benchmark::State& state) {
  kernels::GemmSpec s;
  s.m = state.range(0), s.n = state.range(1), s.k = state.range(2);
  s.trans_a = state.range(3) != 0, s.trans_b = state.range(4) != 0;
  s.lda = s.trans_a ? s.m : s.k, s.ldb = s.trans_b ? s.k : s.n, s.ldc = s.n;
  return s;
}

// gemm() as users get it (Auto backend), then each backend pinned: which one Auto should
// pick on this CPU (gemm.h, auto_gemm_backend).
void BM_QkvGemmTraining(benchmark::State& state) {
  time_gemm(state, &kernels::gemm, training_spec(state), 5);
}
void BM_OpenBlasGemmTraining(benchmark::State& state) {
  kernels::set_gemm_backend(kernels::GemmBackend::OpenBlas);
  time_gemm(state, &kernels::gemm, training_spec(state), 5);
  kernels::set_gemm_backend(kernels::GemmBackend::Auto);
}
void BM_PortableGemmTraining(benchmark::State& state) {
  time_gemm(state, &kernels::gemm_portable, training_spec(state), 5);
}

BENCHMARK(BM_QkvGemmTraining)->Apply(TrainingShapes);
BENCHMARK(BM_OpenBlasGemmTraining)->Apply(TrainingShapes);
BENCHMARK(BM_PortableGemmTraining)->Apply(TrainingShapes);
BENCHMARK(BM_DecodeProjectionGemm)->Apply(DecodeShapes);
BENCHMARK(BM_DecodeProjectionPacked)->Apply(DecodeShapes);

}  // namespace
}  // namespace qkv::bench
