// Row-wise kernels (softmax, layer norm, cross-entropy): memory-bound, so throughput
// is reported in GB/s of bytes touched (each input read and output written once;
// per-row scalars and per-column parameters are negligible and not counted). Compare
// with BM_StreamTriad / BM_Memcpy in the same run.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "bench_util.h"
#include "qkv/kernels/cross_entropy.h"
#include "qkv/kernels/layer_norm.h"
#include "qkv/kernels/softmax.h"

namespace qkv::bench {
namespace {

constexpr double kF = sizeof(float);

void BM_SoftmaxRows(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const float* x = buffer(10, rows * cols);
  float* y = buffer(11, rows * cols);
  use_threads(state, 2);
  for (auto _ : state) {
    kernels::softmax_rows(x, y, rows, cols);
    benchmark::ClobberMemory();
  }
  set_gbps(state, 2 * kF * double(rows * cols));  // read x, write y
}

void BM_LayerNormForward(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const float *x = buffer(10, rows * cols), *gamma = buffer(20, cols), *beta = buffer(21, cols);
  float *y = buffer(11, rows * cols), *mean = buffer(22, rows), *rstd = buffer(23, rows);
  use_threads(state, 2);
  const kernels::LayerNormSize size{rows, cols};
  for (auto _ : state) {
    kernels::layer_norm_forward(x, gamma, beta, y, mean, rstd, size);
    benchmark::ClobberMemory();
  }
  set_gbps(state, 2 * kF * double(rows * cols));  // read x, write y
}

void BM_LayerNormBackward(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const kernels::LayerNormSize size{rows, cols};
  const float *x = buffer(10, rows * cols), *gamma = buffer(20, cols), *beta = buffer(21, cols);
  float *y = buffer(11, rows * cols), *mean = buffer(22, rows), *rstd = buffer(23, rows);
  kernels::layer_norm_forward(x, gamma, beta, y, mean, rstd, size);  // valid mean/rstd
  const float* dy = buffer(12, rows * cols);
  kernels::LayerNormGrads<float> g{buffer(13, rows * cols), buffer(24, cols), buffer(25, cols)};
  use_threads(state, 2);
  for (auto _ : state) {
    kernels::layer_norm_backward(dy, x, gamma, mean, rstd, g, size);
    benchmark::ClobberMemory();
  }
  set_gbps(state, 3 * kF * double(rows * cols));  // read dy, x; write dx
}

kernels::CrossEntropySpec ce_spec(int64_t rows, int64_t vocab) {
  kernels::CrossEntropySpec s;
  s.rows = rows, s.vocab = vocab, s.label_smoothing = 0.1;
  return s;
}

std::vector<int32_t> ce_targets(int64_t rows, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) t[size_t(r)] = int32_t((r * 7919) % vocab);
  return t;
}

void BM_CrossEntropyForward(benchmark::State& state) {
  const int64_t rows = state.range(0), vocab = state.range(1);
  const float* logits = buffer(10, rows * vocab);
  float *loss = buffer(22, rows), *lse = buffer(23, rows);
  const std::vector<int32_t> targets = ce_targets(rows, vocab);
  use_threads(state, 2);
  for (auto _ : state) {
    kernels::cross_entropy_forward(logits, targets.data(), loss, lse, ce_spec(rows, vocab));
    benchmark::ClobberMemory();
  }
  set_gbps(state, kF * double(rows * vocab));  // read logits (twice, from cache: counted once)
}

void BM_CrossEntropyBackward(benchmark::State& state) {
  const int64_t rows = state.range(0), vocab = state.range(1);
  const float* logits = buffer(10, rows * vocab);
  float *loss = buffer(22, rows), *lse = buffer(23, rows), *dlogits = buffer(11, rows * vocab);
  const std::vector<int32_t> targets = ce_targets(rows, vocab);
  const std::vector<float> dloss(static_cast<size_t>(rows), 1.0f / float(rows));
  kernels::cross_entropy_forward(logits, targets.data(), loss, lse, ce_spec(rows, vocab));
  use_threads(state, 2);
  for (auto _ : state) {
    kernels::cross_entropy_backward(logits, targets.data(), lse, dloss.data(), dlogits,
                                    ce_spec(rows, vocab));
    benchmark::ClobberMemory();
  }
  set_gbps(state, 2 * kF * double(rows * vocab));  // read logits, write dlogits
}

// Args: rows, cols, threads. 4096 rows = a batch of tokens; 512 = d_model (or a
// sequence length for attention softmax), 32000 = a vocabulary.
void RowShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "cols", "threads"});
  for (int64_t t : {1, 2})
    for (int64_t cols : {512, 32000}) b->Args({4096, cols, t});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_SoftmaxRows)->Apply(RowShapes);
BENCHMARK(BM_LayerNormForward)->Apply(RowShapes);
BENCHMARK(BM_LayerNormBackward)->Apply(RowShapes);
BENCHMARK(BM_CrossEntropyForward)->Apply(RowShapes);
BENCHMARK(BM_CrossEntropyBackward)->Apply(RowShapes);

}  // namespace
}  // namespace qkv::bench
