// C = A · Wᵀ against a W packed once into column panels (packed_gemm.h). Each panel is
// one TileProduct (B = the panel, [k, 32] with contiguous rows), so the micro-kernel
// streams a panel from L1 (32 KiB at k = 256) while A's rows are broadcast past it.
#include "qkv/kernels/packed_gemm.h"

#include <algorithm>
#include <cstdint>

#include "kernels/detail/tile_product.h"
#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/packed_gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.
#include <hwy/highway.h>

#include "kernels/detail/tile_product-inl.h"
#include "kernels/detail/transpose-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {

// Panels [p0, p1) of C.
void PanelsImpl(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed, int64_t n,
                float* c, int64_t ldc, const float* bias, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t col = p * kPackedPanel;
    detail::TileProduct t;
    t.m = m;
    t.n = std::min(kPackedPanel, n - col);
    t.k = k;
    t.a = a;
    t.ars = lda;
    t.ats = 1;
    t.b = packed + p * kPackedPanel * k;
    t.ldb = kPackedPanel;
    t.c = c + col;
    t.ldc = ldc;
    t.bias = bias ? bias + col : nullptr;
    TileProductRun(t);
  }
}

// Panels [p0, p1) of pack_transposed: W's rows are the panels' columns.
void PackPanelsImpl(const float* w, int64_t n, int64_t k, int64_t ldw, float* packed, int64_t p0,
                    int64_t p1) {
  for (int64_t p = p0; p < p1; ++p)
    TransposeIntoPanel(w + p * kPackedPanel * ldw, ldw,
                       std::min(kPackedPanel, n - p * kPackedPanel), k,
                       packed + p * kPackedPanel * k, kPackedPanel);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {
namespace {

// A chunk of panels is worth a pool hand-off (~1-10 µs) from about this many FLOPs.
constexpr int64_t kParallelFlops = int64_t{1} << 21;
// And a chunk of packing from about this many floats (256 KiB).
constexpr int64_t kParallelCopy = int64_t{1} << 16;

}  // namespace

HWY_EXPORT(PanelsImpl);
HWY_EXPORT(PackPanelsImpl);

void pack_transposed(const float* w, int64_t n, int64_t k, int64_t ldw, float* packed) noexcept {
  if (n <= 0 || k <= 0) return;  // nothing to write (packed may be null then)
  const int64_t panels = (n + kPackedPanel - 1) / kPackedPanel;
  // Panels split over the pool: decoding packs every decoder weight once per batch, and
  // at two threads that had been serial (2-3 % of beam 4). A copy, so any split writes
  // the same panels.
  const int64_t grain = std::max<int64_t>(1, kParallelCopy / (kPackedPanel * k));
  parallel_for(0, panels, grain, [&](int64_t p0, int64_t p1) {
    HWY_DYNAMIC_DISPATCH(PackPanelsImpl)(w, n, k, ldw, packed, p0, p1);
  });
}

void gemm_packed(const float* a, int64_t m, int64_t k, int64_t lda, const float* packed, int64_t n,
                 float* c, int64_t ldc, const float* bias) noexcept {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum: C = 0 (+ bias)
    for (int64_t r = 0; r < m; ++r) {
      if (bias)
        std::copy_n(bias, n, c + r * ldc);
      else
        std::fill_n(c + r * ldc, n, 0.0f);
    }
    return;
  }
  const int64_t panels = (n + kPackedPanel - 1) / kPackedPanel;
  const int64_t panel_flops = 2 * m * kPackedPanel * k;
  const int64_t grain = std::max<int64_t>(1, kParallelFlops / panel_flops);
  auto run = [&](int64_t p0, int64_t p1) {
    HWY_DYNAMIC_DISPATCH(PanelsImpl)(a, m, k, lda, packed, n, c, ldc, bias, p0, p1);
  };
  if (panels <= grain) return run(0, panels);
  parallel_for(0, panels, grain, run);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
