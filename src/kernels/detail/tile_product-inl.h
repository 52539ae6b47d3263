// TileProductRun: qkv's register-tiled micro-kernel for the small products inside
// fused kernels (operands and contract: tile_product.h). Private to src/kernels. A
// Highway "-inl" header: included once per SIMD target from a file that uses
// foreach_target.h, hence the toggling include guard instead of #pragma once.
//
// Why not kernels::gemm: flash attention's tile products are 64 × 64 × d. OpenBLAS
// packs both operands and zeroes C on every call; profiled on the issue-13 machine
// (B=1, H=8, T=1024, d=64, 1 thread) that was 22 % of the time against 54 % in its
// compute kernel. Here B's rows are loaded as they lie (the flash kernel arranges
// every product so that B has contiguous rows) and A is broadcast from any strides.
//
// Register tile: kTileRows rows × 2 vectors of C, k innermost. Per step: 2 vector
// loads of B, kTileRows broadcasts of A, 2·kTileRows FMAs. AVX2 (16 ymm): 6 × 2 = 12
// accumulators + 2 B + 1 broadcast = 15 registers; AVX-512 (32 zmm): 12 × 2 = 24 + 3.
// Tails: the last rows (< kTileRows) by the same code with fewer rows (up to 6 of them
// 4 vectors wide on AVX-512: kWideTailRows); columns by one full vector, then one masked
// vector (MaskedLoad / BlendedStore) for n mod lanes.
// Prefetch (TileProduct::prefetch): the lines a caller needs next, spread evenly over
// the blocks, one per k step, so their misses overlap the FMAs (the step has load slots
// to spare: 2 + kTileRows loads per 2·kTileRows FMAs).
// Measured (64×64×64, A as rows and A transposed + accumulate, best of 40 × 2000 calls
// by thread CPU time on the shared 2-core AMD EPYC): AVX2 6×2 91-95 GFLOP/s, 4×3 92-96,
// 4×2 88-100, 5×2 85-91; AVX-512 12×2 179-203, 6×4 193-219, 4×4 182-200, 8×3 175-198,
// 14×2 163-200 -- all within the noise, so the tile that mirrors gemm_portable's stays.
// OpenBLAS sgemm at 1024³ on the same machine: 90 (Haswell core) / 172 (SkylakeX core).
#if defined(QKV_KERNELS_DETAIL_TILE_PRODUCT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QKV_KERNELS_DETAIL_TILE_PRODUCT_INL_H_
#undef QKV_KERNELS_DETAIL_TILE_PRODUCT_INL_H_
#else
#define QKV_KERNELS_DETAIL_TILE_PRODUCT_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/detail/tile_product.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace tile_product_detail {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int kTileRows = hn::MaxLanes(DF()) >= 16 ? 12 : 6;
constexpr int kTileVectors = 2;

// The lines of p.prefetch still to fetch (a cache line per k step of each block), and
// how many each block takes: the next one is line `line` of the row at `row`.
struct PrefetchCursor {
  const float* row;
  int64_t line, lines_per_row, ld;
  int64_t lines, per_block;
};
constexpr int64_t kLineFloats = 16;

// C[0:R, cols of NV vectors] of the product, with a, b, c already offset to the
// block's first row / column. Partial: the last vector holds only `tail` lanes.
// Not inlined, so that profiles name it: one call per R × NV·lanes × k block costs
// nothing measurable (inlined vs not, interleaved runs: within the ±10 % noise).
template <int R, int NV, bool kPartial>
HWY_NOINLINE void Block(const detail::TileProduct& p, const float* HWY_RESTRICT a,
                        const float* HWY_RESTRICT b, float* HWY_RESTRICT c,
                        const float* HWY_RESTRICT bias, const float* HWY_RESTRICT gate, size_t tail,
                        PrefetchCursor& pf) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  const auto last = hn::FirstN(d, kPartial ? tail : lanes);
  VF acc[R][NV];
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = hn::Zero(d);
  if (p.accumulate) {  // C is read after the sum: start fetching it now (the values are
                       // the same; a cold C otherwise stalls every block's epilogue)
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) hwy::Prefetch(c + r * p.ldc + v * lanes);
  }
  const int64_t pf_lines = std::min(pf.lines, pf.per_block);
  pf.lines -= pf_lines;
  const float* pf_row = pf.row;  // locals: the loop keeps them in registers
  int64_t pf_line = pf.line;
  // A's rows in groups of three from one pointer each: row 3g + i at group[g] + i·ars,
  // an x86 address mode (base + index·4 or ·8) instead of a chain of R − 1 dependent adds
  // per k step when A's rows are strided (ars > 1).
  constexpr int kGroups = (R + 2) / 3;
  const int64_t ars = p.ars, ats = p.ats, ldb = p.ldb, k = p.k;
  const float* group[kGroups];
#pragma GCC unroll 8
  for (int g = 0; g < kGroups; ++g) group[g] = a + 3 * g * ars;
  for (int64_t t = 0; t < k; ++t) {
    if (t < pf_lines) {
      hwy::Prefetch(pf_row + pf_line * kLineFloats);
      if (++pf_line == pf.lines_per_row) pf_line = 0, pf_row += pf.ld;
    }
    const float* bt = b + t * ldb;
    VF bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      bv[v] = (kPartial && v == NV - 1) ? hn::MaskedLoad(last, d, bt + v * lanes)
                                        : hn::LoadU(d, bt + v * lanes);
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) {
      const VF ar = hn::Set(d, group[r / 3][t * ats + (r % 3) * ars]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(ar, bv[v], acc[r][v]);
    }
  }
  pf.row = pf_row;
  pf.line = pf_line;
  const VF alpha = hn::Set(d, p.alpha);
  if (!kPartial && bias == nullptr && gate == nullptr && !p.relu) {
    // The common case (every flash product, a GEMM's slices but its last): one test per
    // block instead of four per vector. At k = 64 the general epilogue below was ~6 % of
    // the block's time (perf annotate, flash forward + backward); the same arithmetic.
    if (p.accumulate) {
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          float* cp = c + r * p.ldc + v * lanes;
          hn::StoreU(hn::MulAdd(alpha, acc[r][v], hn::LoadU(d, cp)), d, cp);
        }
    } else {
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          hn::StoreU(hn::Mul(alpha, acc[r][v]), d, c + r * p.ldc + v * lanes);
    }
    return;
  }
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* cp = c + r * p.ldc + v * lanes;
      const bool part = kPartial && v == NV - 1;
      VF out = p.accumulate ? hn::MulAdd(alpha, acc[r][v],
                                         part ? hn::MaskedLoad(last, d, cp) : hn::LoadU(d, cp))
                            : hn::Mul(alpha, acc[r][v]);
      if (bias != nullptr) {
        const float* bp = bias + v * lanes;
        out = hn::Add(out, part ? hn::MaskedLoad(last, d, bp) : hn::LoadU(d, bp));
      }
      if (p.relu) out = hn::IfThenElseZero(hn::Gt(out, hn::Zero(d)), out);
      if (gate != nullptr) {
        const float* gp = gate + r * p.ldg + v * lanes;
        const VF g = part ? hn::MaskedLoad(last, d, gp) : hn::LoadU(d, gp);
        out = hn::IfThenElseZero(hn::Gt(g, hn::Zero(d)), out);
      }
      if (part)
        hn::BlendedStore(out, last, d, cp);
      else
        hn::StoreU(out, d, cp);
    }
}

// Rows [r0, m) of one column block, fewer than MR: the block with exactly that many.
template <int NV, bool kPartial, int R>
HWY_INLINE void RowTail(const detail::TileProduct& p, int64_t r0, int64_t col, size_t tail,
                        PrefetchCursor& pf) {
  if constexpr (R > 0) {
    if (p.m - r0 == R)
      Block<R, NV, kPartial>(p, p.a + r0 * p.ars, p.b + col, p.c + r0 * p.ldc + col,
                             p.bias ? p.bias + col : nullptr,
                             p.gate ? p.gate + r0 * p.ldg + col : nullptr, tail, pf);
    else
      RowTail<NV, kPartial, R - 1>(p, r0, col, tail, pf);
  }
}

template <int MR, int NV, bool kPartial>
HWY_INLINE void Columns(const detail::TileProduct& p, int64_t col, size_t tail,
                        PrefetchCursor& pf) {
  int64_t r0 = 0;
  for (; r0 + MR <= p.m; r0 += MR)
    Block<MR, NV, kPartial>(p, p.a + r0 * p.ars, p.b + col, p.c + r0 * p.ldc + col,
                            p.bias ? p.bias + col : nullptr,
                            p.gate ? p.gate + r0 * p.ldg + col : nullptr, tail, pf);
  if (r0 < p.m) RowTail<NV, kPartial, MR - 1>(p, r0, col, tail, pf);
}

// Rows left below the last full MR-row block, up to this many, go in blocks 4 vectors
// wide instead of NV (AVX-512 only: 4·6 accumulators + 4 B vectors fit its 32
// registers, not AVX2's 16). A flash tile's 64 rows leave 4 below 5 × 12: as 4 × 2
// blocks those ran ~21 % slower per FLOP than 12 × 2 (2 B loads and 4 broadcasts per 8
// FMAs); 4 × 4 loads 4 + 4 per 16.
constexpr int kWideTailRows = kTileRows >= 12 ? 6 : 0;

// How many column blocks a sweep of w columns makes (NV vectors, then 2, 1, masked).
template <int NV>
int64_t ColumnBlocks(int64_t w, int64_t lanes) {
  int64_t blocks = w / (NV * lanes), rest = w % (NV * lanes);
  if (NV > 2 && rest >= 2 * lanes) ++blocks, rest -= 2 * lanes;
  if (NV > 1 && rest >= lanes) ++blocks, rest -= lanes;
  return blocks + (rest > 0 ? 1 : 0);
}

// Columns [col, n) of p: NV-vector column blocks, then a 2-vector block, a 1-vector
// block and one masked vector for what is left.
template <int MR, int NV>
HWY_INLINE void ColumnSweep(const detail::TileProduct& p, int64_t col, int64_t lanes,
                            PrefetchCursor& pf) {
  for (; col + NV * lanes <= p.n; col += NV * lanes) Columns<MR, NV, false>(p, col, 0, pf);
  if constexpr (NV > 2) {
    if (col + 2 * lanes <= p.n) {
      Columns<MR, 2, false>(p, col, 0, pf);
      col += 2 * lanes;
    }
  }
  if constexpr (NV > 1) {
    if (col + lanes <= p.n) {
      Columns<MR, 1, false>(p, col, 0, pf);
      col += lanes;
    }
  }
  if (col < p.n) Columns<MR, 1, true>(p, col, size_t(p.n - col), pf);
}

}  // namespace tile_product_detail

// The product p (tile_product.h) with an MR × NV-vector register tile. Column blocks
// outermost: one block's B panel (k × NV vectors, 4 KiB at k = 64 on AVX2) stays in L1
// while A's rows stream past it. The columns left after the NV-vector blocks go in a
// 2-vector block, a 1-vector block, then one masked vector; a few rows left below the
// last MR-row block in 4-vector blocks where the target has the registers
// (kWideTailRows). Every element is the same FMA chain whichever block computes it.
template <int MR, int NV>
HWY_INLINE void TileProductRunWith(const detail::TileProduct& p) {
  namespace tp = tile_product_detail;
  if (p.m <= 0 || p.n <= 0) return;
  const int64_t lanes = int64_t(hwy::HWY_NAMESPACE::Lanes(tp::DF()));
  const int64_t tail_rows = p.m % MR;
  const bool wide_tail =
      tp::kWideTailRows > 0 && tail_rows > 0 && tail_rows <= tp::kWideTailRows && p.n >= 4 * lanes;
  const int64_t body_rows = wide_tail ? p.m - tail_rows : p.m;
  // Spread the prefetch lines evenly over the blocks.
  int64_t blocks = (body_rows + MR - 1) / MR * tp::ColumnBlocks<NV>(p.n, lanes);
  if (wide_tail) blocks += tp::ColumnBlocks<4>(p.n, lanes);
  // A row's lines from its start: one more when the rows do not all start on a line
  // (64 bytes), so the line its last float lies on is fetched too.
  int64_t per_row = 0;
  if (p.prefetch != nullptr && p.prefetch_floats > 0 && p.prefetch_rows > 0) {
    const bool aligned = reinterpret_cast<uintptr_t>(p.prefetch) % 64 == 0 &&
                         (p.prefetch_rows == 1 || p.prefetch_ld % tp::kLineFloats == 0);
    per_row = (p.prefetch_floats + tp::kLineFloats - 1) / tp::kLineFloats + (aligned ? 0 : 1);
  }
  const int64_t lines = per_row * (per_row > 0 ? p.prefetch_rows : 0);
  tp::PrefetchCursor pf{p.prefetch,    0,     per_row,
                        p.prefetch_ld, lines, (lines + blocks - 1) / blocks};
  if (!wide_tail) {
    // p itself, not a copy: the copies of this struct, made for every call that a GEMM's
    // RowBlock issues per panel, stalled on forwarding its just-stored fields (~1 % of a
    // Transformer update, perf annotate).
    tp::ColumnSweep<MR, NV>(p, 0, lanes, pf);
    return;
  }
  if constexpr (tp::kWideTailRows > 0) {
    detail::TileProduct body = p, tail = p;  // rows [0, m − tail_rows), the rest
    body.m = body_rows;
    tail.m = tail_rows;
    tail.a += body_rows * p.ars;
    tail.c += body_rows * p.ldc;
    if (tail.gate != nullptr) tail.gate += body_rows * p.ldg;
    if (body.m > 0) tp::ColumnSweep<MR, NV>(body, 0, lanes, pf);
    int64_t col = 0;
    for (; col + 4 * lanes <= p.n; col += 4 * lanes)
      tp::RowTail<4, false, tp::kWideTailRows>(tail, 0, col, 0, pf);
    tp::ColumnSweep<MR, NV>(tail, col, lanes, pf);
  }
}

HWY_INLINE void TileProductRun(const detail::TileProduct& p) {
  TileProductRunWith<tile_product_detail::kTileRows, tile_product_detail::kTileVectors>(p);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
