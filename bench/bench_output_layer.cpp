// The training loss of every model: the tied output projection fused with label-smoothed
// cross-entropy (ops::linear_cross_entropy), forward + all three gradients, in row chunks.
// Its three products are 40-60 % of an RNN update and the largest single cost of the
// Transformer's, so this is where chunk sizes and product strategies are compared.
// GFLOP/s counts the three products (6 · rows · dim · vocab); compare with BM_OpenBlasSgemm.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "bench_util.h"
#include "qkv/ops/linear_cross_entropy.h"

namespace qkv::bench {
namespace {

void BM_LinearCrossEntropy(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1), vocab = state.range(2);
  // bench_util's reusable buffers (values in [-1, 1)); targets spread over the vocabulary.
  const TensorView hidden(buffer(1, rows * dim), Shape{rows, dim}, DType::F32);
  const TensorView weight(buffer(2, vocab * dim), Shape{vocab, dim}, DType::F32);
  Tensor targets = Tensor::empty({rows}, DType::F32);
  for (int64_t r = 0; r < rows; ++r) targets.data<float>()[r] = float((r * 7919) % vocab);
  ops::LinearCrossEntropyOptions options;
  options.loss.label_smoothing = 0.1;
  options.want_gradients = true;
  options.chunk_rows = state.range(3);  // 0: the library's default
  use_threads(state, 4);
  for (auto _ : state) {
    const ops::LinearCrossEntropyResult r =
        ops::linear_cross_entropy(hidden, weight, nullptr, targets, options);
    benchmark::DoNotOptimize(r.loss.data<float>());
  }
  set_gflops(state, 6.0 * double(rows) * double(dim) * double(vocab));
}

// Args: rows (a batch's target tokens: ~6.3k in bench/run_training.sh), dim, vocab,
// chunk rows (0 = default), threads.
void OutputShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"rows", "dim", "vocab", "chunk", "threads"});
  for (int64_t t : {1, 2})
    for (int64_t chunk : {0, 128, 512, 1024, 2048}) b->Args({6400, 256, 8000, chunk, t});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_LinearCrossEntropy)->Apply(OutputShapes);

}  // namespace
}  // namespace qkv::bench
