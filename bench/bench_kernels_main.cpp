// qkv_bench_kernels: kernel throughput next to the machine's limits.
// See bench/README.md for how to run it and read the table.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "qkv/base/cpu.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/kernels/gemm.h"

namespace qkv::bench {

float* buffer(int slot, int64_t count) {
  static std::map<std::pair<int, int64_t>, AlignedArray<float>> buffers;
  auto& buf = buffers[{slot, count}];
  if (!buf) {
    buf = make_aligned_array<float>(static_cast<size_t>(count));
    uint32_t s = 0x9E3779B9u * uint32_t(slot + 1);
    for (int64_t i = 0; i < count; ++i) {  // xorshift32: cheap, deterministic
      s ^= s << 13, s ^= s >> 17, s ^= s << 5;
      buf[size_t(i)] = float(s >> 8) * 0x1.0p-23f - 1.0f;
    }
  }
  return buf.get();
}

}  // namespace qkv::bench

int main(int argc, char** argv) {
  // Default to a short minimum time per benchmark so the whole table takes a couple of
  // minutes on 2 cores; an explicit --benchmark_min_time on the command line wins.
  std::vector<char*> args(argv, argv + argc);
  bool has_min_time = false;
  for (int i = 1; i < argc; ++i)
    has_min_time |= std::strncmp(argv[i], "--benchmark_min_time", 20) == 0;
  static char default_min_time[] = "--benchmark_min_time=0.2";
  if (!has_min_time) args.insert(args.begin() + 1, default_min_time);
  int n = static_cast<int>(args.size());

  const qkv::CpuFeatures& cpu = qkv::cpu_features();
  benchmark::AddCustomContext("cpu_model", cpu.model_name);
  benchmark::AddCustomContext("cpu_features", qkv::describe_cpu_features(cpu));
  benchmark::AddCustomContext("qkv_simd_target", qkv::kernels::active_simd_target());
  benchmark::AddCustomContext("qkv_gemm_backend", qkv::kernels::gemm_backend_description());
  std::string targets;
  for (const auto& t : qkv::kernels::simd_targets()) targets += t.name + " ";
  benchmark::AddCustomContext("qkv_simd_targets_available", targets);
  benchmark::AddCustomContext(
      "openblas", std::string(openblas_get_config()) + " core=" + openblas_get_corename());

  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
