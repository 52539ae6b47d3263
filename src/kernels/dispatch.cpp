#include "qkv/kernels/dispatch.h"

#include <hwy/highway.h>
#include <hwy/targets.h>

namespace qkv::kernels {

std::vector<SimdTarget> simd_targets() {
  std::vector<SimdTarget> out;
  // HWY_TARGETS here is what this library was compiled for (see CMakeLists.txt).
  const int64_t saved = hwy::SupportedTargets();
  hwy::SetSupportedTargetsForTest(0);  // look at the real CPU, not a pinned target
  const int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
  // Lower bits are better targets in Highway's encoding on x86.
  for (int64_t t = available; t != 0; t &= t - 1) {
    const int64_t bit = t & -t;
    out.push_back({bit, hwy::TargetName(bit)});
  }
  if (saved != hwy::SupportedTargets()) hwy::SetSupportedTargetsForTest(saved);
  return out;
}

std::string active_simd_target() {
  const int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(supported & -supported);
}

void force_simd_target(int64_t bits) {
  hwy::SetSupportedTargetsForTest(bits);
}

}  // namespace qkv::kernels
