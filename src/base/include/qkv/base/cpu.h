// What the CPU can do, detected at run time (CPUID), for logs and benchmark context.
// Kernel dispatch itself goes through Highway's own detection (see kernels/dispatch.h).
#pragma once

#include <string>

namespace qkv {

struct CpuFeatures {
  bool sse4_2 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512bf16 = false;
  std::string model_name;  // from /proc/cpuinfo when available, else "unknown"
};

// Detected once, cached.
const CpuFeatures& cpu_features();
// "avx2 fma avx512f ..." : the flags above that are present.
std::string describe_cpu_features(const CpuFeatures& f);

}  // namespace qkv
