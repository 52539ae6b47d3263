// The choice between OpenBLAS and qkv's portable GEMM (see GemmBackend in gemm.h).
#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>

#include "qkv/base/cpu.h"
#include "qkv/base/log.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/kernels/gemm.h"

namespace qkv::kernels {
namespace {

std::string openblas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

// OpenBLAS x86-64 cores whose SGEMM kernels use AVX2+FMA or AVX-512.
bool core_uses_avx2(std::string_view core) {
  for (std::string_view strong : {"haswell", "skylakex", "cooperlake", "sapphirerapids", "zen",
                                  "excavator", "steamroller", "alderlake"}) {
    if (core.size() >= strong.size()) {
      bool match = true;
      for (size_t i = 0; i < strong.size() && match; ++i)
        match = (core[i] | 0x20) == strong[i];  // ASCII lower-case compare of the prefix
      if (match) return true;
    }
  }
  return false;
}

bool has_avx512(const CpuFeatures& cpu) {
  return cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq;
}

bool openblas_is_weak(const CpuFeatures& cpu, std::string_view core) {
  return cpu.avx2 && cpu.fma && !core_uses_avx2(core);
}

GemmBackend resolve(GemmBackend requested) {
  if (requested != GemmBackend::Auto) return requested;
  return auto_gemm_backend(cpu_features(), openblas_core());
}

GemmBackend from_environment() {
  const char* env = std::getenv("QKV_GEMM");
  if (env == nullptr) return GemmBackend::Auto;
  const std::string_view v(env);
  if (v == "openblas") return GemmBackend::OpenBlas;
  if (v == "portable") return GemmBackend::Portable;
  if (v != "auto")
    log(LogLevel::Warning, "ignoring QKV_GEMM=", v, " (use openblas, portable or auto)");
  return GemmBackend::Auto;
}

std::atomic<GemmBackend>& backend_slot() noexcept {
  static std::atomic<GemmBackend> slot{[] {
    try {
      return resolve(from_environment());
    } catch (...) {  // logging or CPU detection failed: the safe default
      return GemmBackend::OpenBlas;
    }
  }()};
  return slot;
}

}  // namespace

GemmBackend auto_gemm_backend(const CpuFeatures& cpu, std::string_view openblas_core) noexcept {
  if (has_avx512(cpu) || openblas_is_weak(cpu, openblas_core)) return GemmBackend::Portable;
  return GemmBackend::OpenBlas;
}

void set_gemm_backend(GemmBackend backend) noexcept {
  GemmBackend resolved = GemmBackend::OpenBlas;
  try {
    resolved = resolve(backend);
  } catch (...) {
  }
  backend_slot().store(resolved);
}

GemmBackend gemm_backend() noexcept {
  return backend_slot().load(std::memory_order_relaxed);
}

std::string gemm_backend_description() {
  const std::string core = openblas_core();
  if (gemm_backend() == GemmBackend::OpenBlas) return "openblas (core " + core + ")";
  if (!core_uses_avx2(core)) return "portable (OpenBLAS core " + core + " lacks AVX2/FMA)";
  if (has_avx512(cpu_features())) {
    // Kernels pinned below AVX-512 (force_simd_target, a benchmark's --simd): say which.
    const std::string target = active_simd_target();
    if (target != "AVX3") return "portable (" + target + " kernels; OpenBLAS core " + core + ")";
    return "portable (AVX-512; OpenBLAS core " + core + " not chosen)";
  }
  return "portable (OpenBLAS core " + core + ", not chosen)";
}

}  // namespace qkv::kernels
