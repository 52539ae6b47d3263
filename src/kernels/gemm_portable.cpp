// gemm_portable(): qkv's own SGEMM, for builds or machines without a usable BLAS.
//
// The classic Goto/BLIS structure (Goto & van de Geijn, "Anatomy of High-Performance
// Matrix Multiplication", TOMS 2008; Van Zee & van de Geijn, BLIS, TOMS 2015):
//   C is cut into tiles of kMC × kNC; for each kKC-deep slice of the k axis the tile's
//   op(A) rows are packed into MR-row micro-panels and op(B) columns into NR-column
//   micro-panels (contiguous, zero-padded, so every transpose case becomes the same
//   unit-stride kernel); an MR × NR register-blocked micro-kernel then does rank-1
//   updates: per step one broadcast of A, two vector loads of B, 2·MR FMAs.
// Packing buffers are fixed-size stack arrays (no heap): ~360 KiB of stack with
// AVX-512, well within the 8 MiB default of the main thread and std::thread. Tiles run in parallel
// over qkv's pool; every C element is produced by the same micro-kernel sequence (k sliced at fixed
// kKC boundaries) whatever tile or thread computes it, so results do not depend on the thread
// count.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "qkv/base/thread_pool.h"
#include "qkv/kernels/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gemm_portable.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(DF()));
// Register tile: NR = two vectors of C columns; MR rows chosen so the 2·MR
// accumulators + 2 B vectors + 1 broadcast fit the register file (AVX-512: 24+3 of 32
// zmm; AVX2: 12+3 of 16 ymm).
constexpr int64_t kNR = 2 * kLanes;
constexpr int64_t kMR = kLanes >= 16 ? 12 : 6;
// Cache blocking: a kKC × kNR B micro-panel (32 KiB with AVX-512) stays in L1 while
// the kMC × kKC packed A block (96 KiB) streams from L2.
constexpr int64_t kKC = 256;
constexpr int64_t kMC = kMR * 8;
constexpr int64_t kNC = kNR * 8;
// Below this many multiply-adds a product runs on the calling thread.
constexpr int64_t kSerialWork = int64_t{1} << 21;

// One k-slice of an MR × NR block of C: acc = Σ_p a[p, :] ⊗ b[p, :], then
//   first slice: C = alpha·acc + beta·C (beta == 0: C = alpha·acc, old C never read)
//   later ones:  C += alpha·acc.
// ap (kc, kMR) packed; bp (kc, kNR) packed; c (mr, nr) valid part of the block.
HWY_INLINE void MicroKernel(int64_t kc, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp,
                            float* c, int64_t ldc, int64_t mr, int64_t nr, bool first, float alpha,
                            float beta) {
  const DF d;
  VF acc0[kMR], acc1[kMR];
#pragma GCC unroll 16
  for (int64_t r = 0; r < kMR; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  for (int64_t p = 0; p < kc; ++p) {
    const VF b0 = hn::Load(d, bp + p * kNR);
    const VF b1 = hn::Load(d, bp + p * kNR + kLanes);
#pragma GCC unroll 16
    for (int64_t r = 0; r < kMR; ++r) {
      const VF av = hn::Set(d, ap[p * kMR + r]);
      acc0[r] = hn::MulAdd(av, b0, acc0[r]);
      acc1[r] = hn::MulAdd(av, b1, acc1[r]);
    }
  }
  const VF va = hn::Set(d, alpha), vb = hn::Set(d, beta);
  auto combine = [&](VF acc, const float* old) {
    if (!first) return hn::MulAdd(va, acc, hn::LoadU(d, old));
    if (beta == 0.0f) return hn::Mul(va, acc);
    return hn::MulAdd(va, acc, hn::Mul(vb, hn::LoadU(d, old)));
  };
  if (mr == kMR && nr == kNR) {
#pragma GCC unroll 16
    for (int64_t r = 0; r < kMR; ++r) {
      float* row = c + r * ldc;
      hn::StoreU(combine(acc0[r], row), d, row);
      hn::StoreU(combine(acc1[r], row + kLanes), d, row + kLanes);
    }
    return;
  }
  // Edge block: go through a full-size scratch tile, copy the valid part back.
  alignas(64) float tile[kMR * kNR];
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) tile[r * kNR + j] = c[r * ldc + j];
#pragma GCC unroll 16
  for (int64_t r = 0; r < kMR; ++r) {
    float* row = tile + r * kNR;
    hn::Store(combine(acc0[r], row), d, row);
    hn::Store(combine(acc1[r], row + kLanes), d, row + kLanes);
  }
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] = tile[r * kNR + j];
}

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into kMR-row micro-panels:
// dst[panel][p][r] = op(A)[i0 + panel·kMR + r, p0 + p], zero rows past mc.
void PackA(const GemmSpec& s, const float* a, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
           float* HWY_RESTRICT dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t rows = std::min(kMR, mc - ip);
    float* panel = dst + ip * kc;  // (kc, kMR)
    if (s.trans_a) {               // A stored (k, m): a row of A holds consecutive i
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * s.lda + i0 + ip;  // (rows)
        for (int64_t r = 0; r < rows; ++r) panel[p * kMR + r] = src[r];
        for (int64_t r = rows; r < kMR; ++r) panel[p * kMR + r] = 0.0f;
      }
    } else {  // A stored (m, k): read each row contiguously, write with stride kMR
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = a + (i0 + ip + r) * s.lda + p0;  // (kc)
        for (int64_t p = 0; p < kc; ++p) panel[p * kMR + r] = src[p];
      }
      for (int64_t r = rows; r < kMR; ++r)
        for (int64_t p = 0; p < kc; ++p) panel[p * kMR + r] = 0.0f;
    }
  }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into kNR-column micro-panels:
// dst[panel][p][j] = op(B)[p0 + p, j0 + panel·kNR + j], zero columns past nc.
void PackB(const GemmSpec& s, const float* b, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
           float* HWY_RESTRICT dst) {
  for (int64_t jp = 0; jp < nc; jp += kNR) {
    const int64_t cols = std::min(kNR, nc - jp);
    float* panel = dst + jp * kc;  // (kc, kNR)
    if (s.trans_b) {               // B stored (n, k): read each column of op(B) contiguously
      for (int64_t j = 0; j < cols; ++j) {
        const float* src = b + (j0 + jp + j) * s.ldb + p0;  // (kc)
        for (int64_t p = 0; p < kc; ++p) panel[p * kNR + j] = src[p];
      }
      for (int64_t j = cols; j < kNR; ++j)
        for (int64_t p = 0; p < kc; ++p) panel[p * kNR + j] = 0.0f;
    } else {  // B stored (k, n): rows of op(B) are contiguous
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * s.ldb + j0 + jp;  // (cols)
        std::memcpy(panel + p * kNR, src, static_cast<size_t>(cols) * sizeof(float));
        for (int64_t j = cols; j < kNR; ++j) panel[p * kNR + j] = 0.0f;
      }
    }
  }
}

// C[i0 : i0+mc, j0 : j0+nc] over all of k.
void Tile(const GemmSpec& s, const float* a, const float* b, float* c, int64_t i0, int64_t mc,
          int64_t j0, int64_t nc) {
  alignas(64) float apack[kMC * kKC];  // (mc / kMR panels, kc, kMR)
  alignas(64) float bpack[kKC * kNC];  // (nc / kNR panels, kc, kNR)
  const auto alpha = static_cast<float>(s.alpha), beta = static_cast<float>(s.beta);
  for (int64_t p0 = 0; p0 < s.k; p0 += kKC) {
    const int64_t kc = std::min(kKC, s.k - p0);
    PackA(s, a, i0, mc, p0, kc, apack);
    PackB(s, b, p0, kc, j0, nc, bpack);
    for (int64_t jp = 0; jp < nc; jp += kNR)    // B micro-panel stays in L1 ...
      for (int64_t ip = 0; ip < mc; ip += kMR)  // ... while A micro-panels stream by
        MicroKernel(kc, apack + ip * kc, bpack + jp * kc, c + (i0 + ip) * s.ldc + j0 + jp, s.ldc,
                    std::min(kMR, mc - ip), std::min(kNR, nc - jp), p0 == 0, alpha, beta);
  }
}

void GemmPortableImpl(const GemmSpec& s, const float* a, const float* b, float* c) {
  const int64_t tiles_m = (s.m + kMC - 1) / kMC, tiles_n = (s.n + kNC - 1) / kNC;
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t i0 = (t / tiles_n) * kMC, j0 = (t % tiles_n) * kNC;
      Tile(s, a, b, c, i0, std::min(kMC, s.m - i0), j0, std::min(kNC, s.n - j0));
    }
  };
  if (s.m * s.n * s.k < kSerialWork) return run(0, tiles_m * tiles_n);
  parallel_for(0, tiles_m * tiles_n, 1, run);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(GemmPortableImpl);

void gemm_portable(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept {
  if (spec.m <= 0 || spec.n <= 0) return;
  if (spec.k <= 0 || spec.alpha == 0.0) {  // C = beta·C; beta == 0 overwrites NaN too
    for (int64_t i = 0; i < spec.m; ++i) {
      float* row = c + i * spec.ldc;  // (n)
      for (int64_t j = 0; j < spec.n; ++j)
        row[j] = spec.beta == 0.0 ? 0.0f : static_cast<float>(spec.beta) * row[j];
    }
    return;
  }
  HWY_DYNAMIC_DISPATCH(GemmPortableImpl)(spec, a, b, c);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
