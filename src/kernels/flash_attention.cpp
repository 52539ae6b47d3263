// Fused scaled-dot attention (see qkv/kernels/flash_attention.h), Highway dynamic
// dispatch. Every tile product runs on qkv's register-tiled micro-kernel
// (detail/tile_product-inl.h), which reads its operands where they lie; only
// flash_attention_weights still calls kernels::gemm (not performance-critical).
//
// The transposed score layout. Per query tile (nr ≤ kBr queries, padded to nrp, a
// multiple of the vector length) Q is transposed once into a stack tile Qᵀ [dh, nrp]
// (dO into dOᵀ [dv, nrp] in backward). Scores are then kept as Sᵀ [nc, nrp]: keys in
// rows, queries in lanes. That makes every product of both passes "A broadcast from any
// strides × B with contiguous rows", the micro-kernel's one shape, with no per-product
// repacking:
//   Sᵀ = scale · K_tile Qᵀ           A = K rows,  B = Qᵀ
//   O  += P̃ V_tile                  A = P̃ᵀ read transposed (ars 1, ats nrp), B = V rows
//   dV_tile += Pᵀ dO                 A = Pᵀ,      B = dO rows
//   dPᵀ = V_tile dOᵀ                 A = V rows,  B = dOᵀ
//   dQ += scale · dS K_tile          A = dSᵀ read transposed, B = K rows
//   dK_tile += scale · dSᵀ Q         A = dSᵀ,     B = Q rows
// and the softmax work runs as vectors across queries (per-lane m, l, α, lse, δ).
//
// Forward, FlashAttention-2 Algorithm 1 (Dao 2023): per (head, query tile), walk key
// tiles of kBc keys. The online softmax keeps per query the running max m and sum l
// of exp(s − m):
//   m' = max(m, max_j s_j),  α = exp(m − m'),  P̃ = exp(S − m'),
//   l' = α·l + Σ_j P̃_j,  O' = α·O + P̃ V,
// so O is rescaled only when the max moves (α = 1 skips the pass). At the end
// O /= l and lse = m + log l. Every mask here (causal, key lengths) makes each query's
// visible keys a prefix [0, visible_i), so key tiles past the tile's last visible key
// are skipped entirely and, in a tile, lanes whose query does not see key j get P = 0.
//
// Backward, FlashAttention-2 Algorithm 2: P is recomputed from lse (P = exp(S − lse)),
//   δ_i = rowsum(dO_i ⊙ O_i),  dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − δ),
//   dQ += scale·dS K,  dK += scale·dSᵀ Q,
// one chunk per head, so dQ/dK/dV of a head are written by one thread only.
//
// Kept probabilities (flash_attention_probs_size): the forward's softmax writes each P̃ᵀ
// tile into its slot (the P̃ V product reads it there) and the lanes' m it was formed with
// into the slot's factor row; once the query tile's last key tile is done (m and l final)
// it writes each slot's factor row f = exp(m_tile − m) / l. The backward forms Pᵀ = P̃ᵀ · f
// from the slot instead of Sᵀ and its exps. What it costs is memory traffic, 16 KiB out
// and back per tile pair: fetched when needed, at the core's miss limit (~15 GB/s), it
// took ~10 % of forward + backward at B = 8, T = 512. Each pass therefore fetches the next
// slot during the current pair's products, a cache line per micro-kernel step
// (TileProduct::prefetch): B = 1, T = 1024 forward + backward went 43.7 → 40.7 ms
// (AVX-512; KeptProbT's share 5.6 → 1.5 %). Bursts did not help: non-temporal stores,
// or prefetching a slot in four quarters between products, left the cost unchanged.
#include "qkv/kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/detail/tile_product.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/gemm.h"

#ifndef QKV_KERNELS_FLASH_ATTENTION_SLOTS_
#define QKV_KERNELS_FLASH_ATTENTION_SLOTS_
namespace qkv::kernels::detail {
// The tile edge (queries and keys) of every target, and the kept probabilities' layout:
// one slot per (head, query tile, key tile) of a key tile's rows × a query tile's lanes,
// then one row of factors, the lanes padded to 16 (a multiple of every x86 target's
// vector length, so each slot stays 64-byte aligned).
constexpr int64_t kFlashTile = 64;
inline int64_t flash_probs_lanes(int64_t tq) {
  return std::min(kFlashTile, (tq + 15) / 16 * 16);
}
inline int64_t flash_probs_factors(int64_t tq, int64_t tk) {  // the factor row's offset
  return std::min(kFlashTile, tk) * flash_probs_lanes(tq);
}
inline int64_t flash_probs_slot(int64_t tq, int64_t tk) {
  return flash_probs_factors(tq, tk) + flash_probs_lanes(tq);
}
inline int64_t flash_tiles(int64_t t) {
  return (t + kFlashTile - 1) / kFlashTile;
}
inline int64_t flash_probs_query_tile(int64_t tq, int64_t tk) {  // one slot per key tile
  return flash_tiles(tk) * flash_probs_slot(tq, tk);
}
}  // namespace qkv::kernels::detail
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/flash_attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "kernels/detail/exp_softmax-inl.h"
#include "kernels/detail/for_spans-inl.h"
#include "kernels/detail/tile_product-inl.h"
#include "kernels/detail/transpose-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using detail::TileProduct;
using exp_detail::ExpSoftmax;

constexpr float kInf = std::numeric_limits<float>::infinity();
// Tile sizes: kBr queries × kBc keys. A score tile (and dP in backward) is kBr·kBc
// floats = 16 KiB on the stack, small enough to stay in L1/L2 with the K/V tile.
constexpr int64_t kBr = detail::kFlashTile;
constexpr int64_t kBc = detail::kFlashTile;
static_assert(16 % hn::MaxLanes(DF()) == 0, "a kept-probabilities slot pads lanes to 16");
// Head dims up to kDc are transposed once per query tile (32 KiB of stack); a larger
// head dim is transposed kDc at a time per product (1/kBc extra work), so the stack
// stays bounded for any dh, dv.
constexpr int64_t kDc = 128;

HWY_INLINE int64_t PaddedLanes(int64_t nr) {
  const int64_t lanes = int64_t(hn::Lanes(DF()));
  return (nr + lanes - 1) / lanes * lanes;
}

// x[c] = exp(x[c] − m) over [0, n); returns the sum.
HWY_INLINE float ExpSubSum(float* x, int64_t n, float m) {
  const DF d;
  auto vsum = hn::Zero(d);
  float tail = 0.0f;
  ForSpans(n, [&](auto dd, int64_t c) {
    const auto e = hn::Exp(dd, hn::Sub(hn::LoadU(dd, x + c), hn::Set(dd, m)));
    hn::StoreU(e, dd, x + c);
    if constexpr (hn::MaxLanes(dd) == 1)
      tail += hn::GetLane(e);
    else
      vsum = hn::Add(vsum, e);
  });
  return hn::GetLane(hn::SumOfLanes(d, vsum)) + tail;
}

HWY_INLINE void ScaleRow(float* x, int64_t n, float a) {
  ForSpans(n, [&](auto dd, int64_t c) {
    hn::StoreU(hn::Mul(hn::LoadU(dd, x + c), hn::Set(dd, a)), dd, x + c);
  });
}

// Visible keys [0, n) of query row i of head h, and the largest n over rows [i0, i1).
HWY_INLINE int64_t Visible(const FlashAttentionSpec& s, int64_t h, int64_t i) {
  return ref::flash_visible(s, h, i);
}
HWY_INLINE int64_t TileKeyEnd(const FlashAttentionSpec& s, int64_t h, int64_t i0, int64_t i1) {
  int64_t end = 0;
  for (int64_t i = i0; i < i1; ++i) end = std::max(end, Visible(s, h, i));
  return end;
}

// A query-side operand X [nr, dx] (rows ld apart: Q or dO of one query tile), held
// transposed as Xᵀ [dx, nrp] with the pad lanes [nr, nrp) zero.
struct QueryTileT {
  const float* x;
  int64_t nr, nrp, dx, ld;
  HWY_ALIGN float t[kDc * kBr];

  QueryTileT(const float* rows, int64_t n, int64_t dim, int64_t row_stride)
      : x(rows), nr(n), nrp(PaddedLanes(n)), dx(dim), ld(row_stride) {
    if (dx <= kDc) Transpose(0, dx);
  }
  // t = X[:, c0:c0+dc]ᵀ.
  void Transpose(int64_t c0, int64_t dc) {
    for (int64_t c = 0; c < dc; ++c) std::fill(t + c * nrp + nr, t + (c + 1) * nrp, 0.0f);
    TransposeCopy(x + c0, ld, nr, dc, t, nrp);  // 8 × 8 blocks through registers
  }
};

// Every product of the flash kernels goes through this one out-of-line copy of the
// micro-kernel's sweep. With TileProductRun inlined at each of its five call sites, GCC's
// points-to analysis over the copies took 3 of this file's 3.3 minutes under the ci
// preset's -O1 + ASan (a tenth of CI's build); now 20 s. The same code runs: the sweep
// is still inlined into one caller that passes no bias, gate or ReLU, and GCC still
// specialises the blocks for that (TileProductRun itself out of line cost 3-4 % of
// flash forward + backward: the blocks then kept their bias and gate tests).
HWY_NOINLINE void FlashProduct(const TileProduct& p) {
  TileProductRun(p);
}

// out [nc, nrp] = alpha · R Xᵀ for R [nc, dx] (rows ld apart: K or V of a key tile).
HWY_INLINE void ProductT(const float* rows, int64_t ld, int64_t nc, float alpha, QueryTileT& x,
                         float* out) {
  for (int64_t c0 = 0; c0 < x.dx; c0 += kDc) {
    const int64_t dc = std::min(kDc, x.dx - c0);
    if (x.dx > kDc) x.Transpose(c0, dc);
    FlashProduct(
        {nc, x.nrp, dc, rows + c0, ld, 1, x.t, x.nrp, out, x.nrp, alpha, /*accumulate=*/c0 > 0});
  }
}

// The kept slot of the key tile after the one at j0 (its first floats: keys × lanes),
// or none past the query tile's last visible key tile: what each pass fetches during the
// current tile pair's products (TileProduct::prefetch).
struct SlotSpan {
  const float* at = nullptr;
  int64_t floats = 0;
};
HWY_INLINE SlotSpan NextSlot(const float* slots, int64_t slot, int64_t j0, int64_t kend,
                             int64_t nrp) {
  if (!slots || j0 + kBc >= kend) return {};
  return {slots + (j0 / kBc + 1) * slot, std::min(kBc, kend - j0 - kBc) * nrp};
}

// Per-query (lane) state of one query tile; pad lanes see no key.
struct QueryLanes {
  HWY_ALIGN int32_t visible[kBr];
  HWY_ALIGN float m[kBr], l[kBr], alpha[kBr];
};

// Lanes that see key j: j < visible_i.
HWY_INLINE auto Sees(const hn::Vec<DI> visible, int64_t j) {
  const DI di;
  return hn::RebindMask(DF(), hn::Lt(hn::Set(di, int32_t(j)), visible));
}

// One online-softmax step over a score tile st = Sᵀ [nc, nrp] of keys j0..: updates
// m, l, α per lane and writes P̃ᵀ = exp(Sᵀ − m'), 0 where masked, to pt [nc, nrp] (st
// itself, or a kept slot). kMasked = false when every lane sees every key of the tile
// (same results, no compare/select: the softmax was 19 % of a forward pass on AVX2 at
// d = 64).
template <bool kMasked>
HWY_NOINLINE void OnlineSoftmaxT(const float* st, int64_t nc, int64_t nrp, int64_t j0,
                                 QueryLanes& q, float* pt) {
  const DF d;
  const DI di;
  const VF ninf = hn::Set(d, -kInf);
  for (int64_t i = 0; i < nrp; i += int64_t(hn::Lanes(d))) {
    const auto visible = hn::Load(di, q.visible + i);
    VF tmax = ninf;
    for (int64_t j = 0; j < nc; ++j) {
      const VF sj = hn::LoadU(d, st + j * nrp + i);
      tmax = hn::Max(tmax, kMasked ? hn::IfThenElse(Sees(visible, j0 + j), sj, ninf) : sj);
    }
    const VF mold = hn::Load(d, q.m + i), mnew = hn::Max(mold, tmax);
    // A lane that has seen no key yet keeps m = −inf and P̃ = 0: subtract 0 there.
    const VF msub = hn::IfThenZeroElse(hn::Eq(mnew, ninf), mnew);
    // α = exp(m − m'): 1 where m did not move, and on a lane's first visible tile too
    // (its O and l are still 0, so any α is exact: 1 spares the rescaling pass).
    const auto keep = hn::Or(hn::Eq(mold, mnew), hn::Eq(mold, ninf));
    const VF alpha = hn::IfThenElse(keep, hn::Set(d, 1.0f), hn::Exp(d, hn::Sub(mold, msub)));
    VF sum = hn::Zero(d);
    for (int64_t j = 0; j < nc; ++j) {
      VF p = ExpSoftmax(d, hn::Sub(hn::LoadU(d, st + j * nrp + i), msub));
      if constexpr (kMasked) p = hn::IfThenElseZero(Sees(visible, j0 + j), p);
      hn::StoreU(p, d, pt + j * nrp + i);
      sum = hn::Add(sum, p);
    }
    hn::Store(mnew, d, q.m + i);
    hn::Store(hn::MulAdd(alpha, hn::Load(d, q.l + i), sum), d, q.l + i);
    hn::Store(alpha, d, q.alpha + i);
  }
}

// Kept probabilities: each slot t's factor row, which holds the m_t its P̃ was formed
// with, becomes f = exp(m_t − m) / l per lane. Lanes that had seen no key by tile t
// (m_t = −inf: their P̃ there is 0) and lanes that see none (l = 0, the pad lanes) get 0.
HWY_NOINLINE void KeepFactorsT(float* slots, int64_t slot, int64_t factors, int64_t kend,
                               int64_t nrp, const QueryLanes& q) {
  const DF d;
  const VF ninf = hn::Set(d, -kInf);
  for (int64_t t = 0; t * kBc < kend; ++t) {
    float* f = slots + t * slot + factors;
    for (int64_t i = 0; i < nrp; i += int64_t(hn::Lanes(d))) {
      const VF m = hn::Load(d, q.m + i), l = hn::Load(d, q.l + i);
      const VF m_t = hn::LoadU(d, f + i);
      const auto seen = hn::And(hn::Ne(m_t, ninf), hn::Gt(l, hn::Zero(d)));
      const VF e = hn::Exp(d, hn::IfThenElseZero(seen, hn::Sub(m_t, m)));
      hn::StoreU(hn::IfThenElseZero(seen, hn::Div(e, hn::IfThenElse(seen, l, hn::Set(d, 1.0f)))), d,
                 f + i);
    }
  }
}

// One (head h, queries [q0, q0 + nr)) forward chunk: the online softmax above. slots:
// this query tile's kept probabilities, or null.
void ForwardTile(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                 float* out, float* lse, int64_t h, int64_t q0, int64_t nr, float* slots) {
  const int64_t ldk = flash_ldk(s), ldv = flash_ldv(s), ldo = flash_ldo(s);
  QueryTileT qt(flash_row(s, q, FlashOperand::Q, h, q0), nr, s.dh, flash_ldq(s));  // Qᵀ [dh, nrp]
  const int64_t nrp = qt.nrp;
  HWY_ALIGN float st[kBc * kBr];  // Sᵀ, then P̃ᵀ [nc, nrp]
  QueryLanes lanes;
  int64_t all_see = std::numeric_limits<int64_t>::max();  // keys [0, all_see) seen by every lane
  for (int64_t i = 0; i < nrp; ++i) {
    lanes.visible[i] = i < nr ? int32_t(Visible(s, h, q0 + i)) : 0;
    all_see = std::min<int64_t>(all_see, lanes.visible[i]);
    lanes.m[i] = -kInf;
    lanes.l[i] = 0.0f;
  }
  const float* kh = flash_key_head(s, k, h);              // [tk, dh]
  const float* vh = flash_value_head(s, v, h);            // [tk, dv]
  float* ot = flash_row(s, out, FlashOperand::O, h, q0);  // [nr, dv], the accumulator O
  const int64_t kend = TileKeyEnd(s, h, q0, q0 + nr);
  // The first key tile's product writes O (every lane's α is 1 there); a tile that sees
  // no key leaves O = 0.
  if (kend <= 0)
    for (int64_t r = 0; r < nr; ++r) std::fill_n(ot + r * ldo, s.dv, 0.0f);
  const int64_t slot = detail::flash_probs_slot(s.tq, s.tk);
  const int64_t factors = detail::flash_probs_factors(s.tq, s.tk);
  for (int64_t j0 = 0; j0 < kend; j0 += kBc) {
    const int64_t nc = std::min(kBc, kend - j0);
    ProductT(kh + j0 * ldk, ldk, nc, float(s.scale), qt, st);
    // P̃ᵀ goes into its slot when kept (and the m it was formed with into the slot's
    // factor row, for now), else back into st.
    float* pt = slots ? slots + j0 / kBc * slot : st;
    if (j0 + nc <= all_see)
      OnlineSoftmaxT<false>(st, nc, nrp, j0, lanes, pt);
    else
      OnlineSoftmaxT<true>(st, nc, nrp, j0, lanes, pt);
    if (slots) std::copy(lanes.m, lanes.m + nrp, pt + factors);
    for (int64_t r = 0; r < nr; ++r)
      if (lanes.alpha[r] != 1.0f) ScaleRow(ot + r * ldo, s.dv, lanes.alpha[r]);
    // O += P̃ V_tile: A = P̃ᵀ read transposed, B = V_tile [nc, dv].
    TileProduct pv{nr, s.dv, nc, pt, 1, nrp, vh + j0 * ldv, ldv, ot, ldo, 1.0f, j0 > 0};
    const SlotSpan next = NextSlot(slots, slot, j0, kend, nrp);  // fetched while multiplying
    pv.prefetch = next.at;
    pv.prefetch_floats = next.floats;
    if (j0 + kBc >= kend && q0 + nr < flash_queries(s, h)) {
      // The last product fetches the next query tile's rows of Q instead: their
      // transposition into Qᵀ otherwise stalls on them (half of this function's share, a
      // tenth of the forward at B=8 T=256, where a query tile has four key tiles).
      pv.prefetch = flash_row(s, q, FlashOperand::Q, h, q0 + nr);
      pv.prefetch_floats = s.dh;
      pv.prefetch_rows = std::min(kBr, flash_queries(s, h) - q0 - nr);
      pv.prefetch_ld = flash_ldq(s);
    }
    FlashProduct(pv);
  }
  if (slots) KeepFactorsT(slots, slot, factors, kend, nrp, lanes);
  for (int64_t r = 0; r < nr; ++r) {
    if (lanes.l[r] == 0.0f) {  // no visible key: O = 0 (already), lse = -inf
      lse[h * s.tq + q0 + r] = -kInf;
      continue;
    }
    ScaleRow(ot + r * ldo, s.dv, 1.0f / lanes.l[r]);
    lse[h * s.tq + q0 + r] = float(double(lanes.m[r]) + std::log(double(lanes.l[r])));
  }
}

// Σ_c a[c]·b[c] over [0, n): inlined per target rather than kernels::dot, which would be
// a dispatched call per key in the innermost loop.
HWY_INLINE float Dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int64_t n) {
  const DF d;
  VF acc = hn::Zero(d);
  float tail = 0.0f;
  ForSpans(n, [&](auto dd, int64_t c) {
    const auto prod = hn::Mul(hn::LoadU(dd, a + c), hn::LoadU(dd, b + c));
    if constexpr (hn::MaxLanes(dd) == 1)
      tail += hn::GetLane(prod);
    else
      acc = hn::Add(acc, prod);
  });
  return hn::GetLane(hn::SumOfLanes(d, acc)) + tail;
}

// Dot(a, b + i·n, n) for the four rows i = 0..3 of b [4, n] (a decoding step's keys),
// each with the operations of Dot in the same order, so the same bits: four independent
// chains in one loop, where a loop over keys waited on each key's chain of adds and its
// horizontal sum (single-query attention's scores are a sixth of beam search's time
// outside the products).
HWY_INLINE void Dot4(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int64_t n,
                     float* HWY_RESTRICT out) {
  const DF d;
  VF acc0 = hn::Zero(d), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  ForSpans(n, [&](auto dd, int64_t c) {
    const auto x = hn::LoadU(dd, a + c);
    const auto p0 = hn::Mul(x, hn::LoadU(dd, b + c));
    const auto p1 = hn::Mul(x, hn::LoadU(dd, b + n + c));
    const auto p2 = hn::Mul(x, hn::LoadU(dd, b + 2 * n + c));
    const auto p3 = hn::Mul(x, hn::LoadU(dd, b + 3 * n + c));
    if constexpr (hn::MaxLanes(dd) == 1) {
      tail[0] += hn::GetLane(p0);
      tail[1] += hn::GetLane(p1);
      tail[2] += hn::GetLane(p2);
      tail[3] += hn::GetLane(p3);
    } else {
      acc0 = hn::Add(acc0, p0);
      acc1 = hn::Add(acc1, p1);
      acc2 = hn::Add(acc2, p2);
      acc3 = hn::Add(acc3, p3);
    }
  });
  out[0] = hn::GetLane(hn::SumOfLanes(d, acc0)) + tail[0];
  out[1] = hn::GetLane(hn::SumOfLanes(d, acc1)) + tail[1];
  out[2] = hn::GetLane(hn::SumOfLanes(d, acc2)) + tail[2];
  out[3] = hn::GetLane(hn::SumOfLanes(d, acc3)) + tail[3];
}

// y[c] = a·y[c] + w·x[c] over [0, n).
HWY_INLINE void ScaleAddRow(float* HWY_RESTRICT y, float a, float w, const float* HWY_RESTRICT x,
                            int64_t n) {
  ForSpans(n, [&](auto dd, int64_t c) {
    const auto scaled = hn::Mul(hn::Set(dd, a), hn::LoadU(dd, y + c));
    hn::StoreU(hn::MulAdd(hn::Set(dd, w), hn::LoadU(dd, x + c), scaled), dd, y + c);
  });
}

// o = alpha·o + Σ_j p[j]·v_j over the block's nc value rows (rows dv apart), o held in
// NV vectors (dv = NV · lanes) across the block: per element the operations of
// ScaleAddRow, in the same order (o·alpha then one fma per key; later keys scale by 1,
// which is exact and skipped), so the same bits without a store and reload of o per key.
template <int NV>
HWY_INLINE void AccumulateValues(float* HWY_RESTRICT o, float alpha, const float* HWY_RESTRICT p,
                                 const float* HWY_RESTRICT v, int64_t nc, int64_t dv) {
  const DF d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  VF acc[NV];
  const VF a = hn::Set(d, alpha), w0 = hn::Set(d, p[0]);
#pragma GCC unroll 8
  for (int i = 0; i < NV; ++i)
    acc[i] = hn::MulAdd(w0, hn::LoadU(d, v + i * lanes), hn::Mul(a, hn::LoadU(d, o + i * lanes)));
  for (int64_t j = 1; j < nc; ++j) {
    const VF w = hn::Set(d, p[j]);
    const float* vj = v + j * dv;
#pragma GCC unroll 8
    for (int i = 0; i < NV; ++i) acc[i] = hn::MulAdd(w, hn::LoadU(d, vj + i * lanes), acc[i]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < NV; ++i) hn::StoreU(acc[i], d, o + i * lanes);
}

// The same for any dv: register-resident for dv of 1, 2, 4 or 8 whole vectors (dv 64 is
// 4 AVX-512 or 8 AVX2 vectors), else row by row in memory.
HWY_INLINE void AccumulateValueRows(float* o, float alpha, const float* p, const float* v,
                                    int64_t nc, int64_t dv) {
  const int64_t lanes = int64_t(hn::Lanes(DF()));
  if (nc > 0 && dv % lanes == 0) {
    switch (dv / lanes) {
      case 1:
        return AccumulateValues<1>(o, alpha, p, v, nc, dv);
      case 2:
        return AccumulateValues<2>(o, alpha, p, v, nc, dv);
      case 4:
        return AccumulateValues<4>(o, alpha, p, v, nc, dv);
      case 8:
        return AccumulateValues<8>(o, alpha, p, v, nc, dv);
      default:
        break;
    }
  }
  for (int64_t j = 0; j < nc; ++j) ScaleAddRow(o, j == 0 ? alpha : 1.0f, p[j], v + j * dv, dv);
}

// Head h when it has one query (tq = 1: a decoding step). The tiled path would hold the
// query side in the vector lanes, 1 of 8 or 16 used; here the scores are dot products
// along dh and the output a weighted sum of V's rows, with the same online softmax over
// blocks of kBc keys.
void SingleQuery(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                 float* out, float* lse, int64_t h) {
  const int64_t n = Visible(s, h, 0);
  const float* qh = q + h * s.dh;
  const float* kh = flash_key_head(s, k, h);    // [tk, dh]
  const float* vh = flash_value_head(s, v, h);  // [tk, dv]
  float* o = out + h * s.dv;
  std::fill(o, o + s.dv, 0.0f);
  HWY_ALIGN float p[kBc];
  float m = -kInf, l = 0.0f;
  for (int64_t j0 = 0; j0 < n; j0 += kBc) {
    const int64_t nc = std::min(kBc, n - j0);
    float mt = -kInf;
    int64_t j = 0;
    for (; j + 4 <= nc; j += 4) Dot4(qh, kh + (j0 + j) * s.dh, s.dh, p + j);
    for (; j < nc; ++j) p[j] = Dot(qh, kh + (j0 + j) * s.dh, s.dh);
    for (j = 0; j < nc; ++j) {
      p[j] = float(s.scale) * p[j];
      mt = std::max(mt, p[j]);
    }
    const float mnew = std::max(m, mt);
    const float alpha = m == -kInf ? 0.0f : std::exp(m - mnew);  // rescales what came before
    l = alpha * l + ExpSubSum(p, nc, mnew);
    AccumulateValueRows(o, alpha, p, vh + j0 * s.dv, nc, s.dv);
    m = mnew;
  }
  if (l == 0.0f) {  // no visible key: O = 0, lse = -inf
    lse[h] = -kInf;
    return;
  }
  ScaleRow(o, s.dv, 1.0f / l);
  lse[h] = float(double(m) + std::log(double(l)));
}

void ForwardImpl(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                 float* out, float* lse, float* probs) {
  if (s.tq == 1 && !probs && !s.rows) {
    // Heads of ~tk·(dh + dv) multiply-adds each: chunks of several, one hand-off each.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, s.tk * (s.dh + s.dv)));
    parallel_for(0, s.bh, grain, [&](int64_t h0, int64_t h1) {
      for (int64_t h = h0; h < h1; ++h) SingleQuery(s, q, k, v, out, lse, h);
    });
    return;
  }
  const int64_t tiles = detail::flash_tiles(s.tq);
  const int64_t slots = detail::flash_probs_query_tile(s.tq, s.tk);
  parallel_for(0, s.bh * tiles, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t h = c / tiles, q0 = (c % tiles) * kBr;
      const int64_t nr = std::min(kBr, flash_queries(s, h) - q0);
      if (nr > 0) ForwardTile(s, q, k, v, out, lse, h, q0, nr, probs ? probs + c * slots : nullptr);
      for (int64_t i = q0 + std::max<int64_t>(nr, 0); i < std::min(q0 + kBr, s.tq); ++i)
        lse[h * s.tq + i] = -kInf;  // packed rows: past the sequence's queries
    }
  });
}

// Σ_c a[c]·b[c] over [0, n) in double (each product exact), as vectors of doubles: the
// scalar loop was ~1.4 % of forward + backward at T = 512.
HWY_INLINE double DotF64(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  const int64_t lanes = int64_t(hn::Lanes(dd));
  auto acc = hn::Zero(dd);
  int64_t c = 0;
  for (; c + lanes <= n; c += lanes)
    acc = hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(df, a + c)),
                     hn::PromoteTo(dd, hn::LoadU(df, b + c)), acc);
  double sum = hn::GetLane(hn::SumOfLanes(dd, acc));
  for (; c < n; ++c) sum += double(a[c]) * double(b[c]);
  return sum;
}

// Per-query (lane) inputs of the backward pass of one query tile; pad lanes and
// fully masked queries see no key (visible 0), so their P and dS are 0.
struct BackwardLanes {
  HWY_ALIGN int32_t visible[kBr];
  HWY_ALIGN float lse[kBr], delta[kBr];
};

// st = Sᵀ [nc, nrp] of keys j0.. becomes Pᵀ = exp(Sᵀ − lse), 0 where masked (kMasked
// false: every lane sees every key of the tile).
template <bool kMasked>
HWY_NOINLINE void ProbT(float* st, int64_t nc, int64_t nrp, int64_t j0, const BackwardLanes& q) {
  const DF d;
  const DI di;
  for (int64_t i = 0; i < nrp; i += int64_t(hn::Lanes(d))) {
    const auto visible = hn::Load(di, q.visible + i);
    const VF l = hn::Load(d, q.lse + i);
    for (int64_t j = 0; j < nc; ++j) {
      float* sj = st + j * nrp + i;
      VF p = ExpSoftmax(d, hn::Sub(hn::LoadU(d, sj), l));
      if constexpr (kMasked) p = hn::IfThenElseZero(Sees(visible, j0 + j), p);
      hn::StoreU(p, d, sj);
    }
  }
}

// pt = Pᵀ [nc, nrp] from a kept slot: its P̃ᵀ rows times its factor row f [nrp].
HWY_NOINLINE void KeptProbT(const float* kept, const float* f, int64_t nc, int64_t nrp, float* pt) {
  const DF d;
  for (int64_t j = 0; j < nc; ++j)
    for (int64_t i = 0; i < nrp; i += int64_t(hn::Lanes(d)))
      hn::Store(hn::Mul(hn::LoadU(d, kept + j * nrp + i), hn::LoadU(d, f + i)), d,
                pt + j * nrp + i);
}

// dpt = pt ⊙ (dpt − δ): dSᵀ [nc, nrp] (0 wherever P is 0).
HWY_NOINLINE void SoftmaxGradT(const float* pt, float* dpt, int64_t nc, int64_t nrp,
                               const BackwardLanes& q) {
  const DF d;
  for (int64_t i = 0; i < nrp; i += int64_t(hn::Lanes(d))) {
    const VF delta = hn::Load(d, q.delta + i);
    for (int64_t j = 0; j < nc; ++j) {
      const int64_t at = j * nrp + i;
      hn::StoreU(hn::Mul(hn::LoadU(d, pt + at), hn::Sub(hn::LoadU(d, dpt + at), delta)), d,
                 dpt + at);
    }
  }
}

// p on C's rows [0, w) added to what they hold, rows [w, m) written: the first product
// into a gradient row writes it instead of adding to zeros (no zeroing pass; the same
// bits: the sum starts at +0, so alpha·sum + 0 rounds as alpha·sum). The prefetch goes
// with the larger part.
HWY_INLINE void RunAddingRowsBelow(TileProduct p, int64_t w) {
  w = std::clamp<int64_t>(w, 0, p.m);
  TileProduct written = p;
  written.m = p.m - w;
  written.a += w * p.ars;
  written.c += w * p.ldc;
  written.accumulate = false;
  p.m = w;
  if (p.m >= written.m)
    written.prefetch = nullptr;
  else
    p.prefetch = nullptr;
  FlashProduct(p);
  FlashProduct(written);
}

// The backward pass of queries [q0, q0 + nr) of head h against every key tile they see.
// slots: this query tile's kept probabilities (ForwardTile's), or null: recompute them.
// kv_written: the head's dK and dV rows [0, kv_written) hold sums already (earlier query
// tiles'); the rows past it are written, not added to, and it grows to the keys this
// tile sees. dQ's rows are written by the first key tile (zeroed if the tile sees none).
void BackwardQueryTile(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                       const float* lse, const float* dout, const float* delta, float* dq,
                       float* dk, float* dv, int64_t h, int64_t q0, int64_t nr, const float* slots,
                       int64_t& kv_written) {
  const int64_t ldq = flash_ldq(s), ldk = flash_ldk(s), ldv = flash_ldv(s), ldo = flash_ldo(s);
  const float* qrows = flash_row(s, q, FlashOperand::Q, h, q0);      // [nr, dh]
  const float* dorows = flash_row(s, dout, FlashOperand::O, h, q0);  // [nr, dv]
  float* dqrows = flash_row(s, dq, FlashOperand::Q, h, q0);          // [nr, dh]
  QueryTileT qt(qrows, nr, s.dh, ldq), dot(dorows, nr, s.dv, ldo);  // Qᵀ [dh, nrp], dOᵀ [dv, nrp]
  const int64_t nrp = qt.nrp;
  BackwardLanes lanes;
  int64_t all_see = std::numeric_limits<int64_t>::max();  // keys [0, all_see) seen by every lane
  for (int64_t i = 0; i < nrp; ++i) {
    const float l = i < nr ? lse[h * s.tq + q0 + i] : -kInf;
    lanes.visible[i] = l == -kInf ? 0 : int32_t(Visible(s, h, q0 + i));
    all_see = std::min<int64_t>(all_see, lanes.visible[i]);
    lanes.lse[i] = l == -kInf ? 0.0f : l;
    lanes.delta[i] = i < nr ? delta[h * s.tq + q0 + i] : 0.0f;
  }
  HWY_ALIGN float pt[kBc * kBr];   // Pᵀ [nc, nrp]
  HWY_ALIGN float dpt[kBc * kBr];  // dPᵀ, then dSᵀ [nc, nrp]
  const float scale = float(s.scale);
  const int64_t kend = TileKeyEnd(s, h, q0, q0 + nr);
  if (kend <= 0)
    for (int64_t r = 0; r < nr; ++r) std::fill_n(dqrows + r * ldq, s.dh, 0.0f);
  const int64_t slot = detail::flash_probs_slot(s.tq, s.tk);
  const int64_t factors = detail::flash_probs_factors(s.tq, s.tk);
  for (int64_t j0 = 0; j0 < kend; j0 += kBc) {
    const int64_t nc = std::min(kBc, kend - j0);
    const float* kt = flash_key_head(s, k, h) + j0 * ldk;    // [nc, dh]
    const float* vt = flash_value_head(s, v, h) + j0 * ldv;  // [nc, dv]
    float* dkt = flash_row(s, dk, FlashOperand::K, h, j0);   // [nc, dh]
    float* dvt = flash_row(s, dv, FlashOperand::V, h, j0);   // [nc, dv]
    if (slots) {
      const float* kept = slots + j0 / kBc * slot;
      KeptProbT(kept, kept + factors, nc, nrp, pt);
    } else {
      ProductT(kt, ldk, nc, scale, qt, pt);
      if (j0 + nc <= all_see)
        ProbT<false>(pt, nc, nrp, j0, lanes);
      else
        ProbT<true>(pt, nc, nrp, j0, lanes);
    }
    TileProduct dvp{nc, s.dv, nr, pt, nrp, 1, dorows, ldo, dvt, ldv, 1.0f, true};  // dV += Pᵀ dO
    TileProduct dqp{nr, s.dh, nc, dpt, 1, nrp, kt, ldk, dqrows, ldq, scale, j0 > 0};  // dQ += dS K
    const SlotSpan next = NextSlot(slots, slot, j0, kend, nrp);  // fetched while multiplying,
    if (next.at) {                                               // half in each product
      dvp.prefetch = next.at;
      dvp.prefetch_floats = next.floats / 2;
      dqp.prefetch = next.at + next.floats / 2;
      dqp.prefetch_floats = next.floats - next.floats / 2;
    }
    RunAddingRowsBelow(dvp, kv_written - j0);
    ProductT(vt, ldv, nc, 1.0f, dot, dpt);  // dPᵀ = V dOᵀ
    SoftmaxGradT(pt, dpt, nc, nrp, lanes);
    FlashProduct(dqp);
    RunAddingRowsBelow(
        {nc, s.dh, nr, dpt, nrp, 1, qrows, ldq, dkt, ldk, scale, true},  // dK += dSᵀ Q
        kv_written - j0);
  }
  kv_written = std::max(kv_written, kend);
}

void BackwardHead(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                  const float* out, const float* lse, const float* dout, float* delta, float* dq,
                  float* dk, float* dv, int64_t h, const float* probs) {
  const int64_t nq = flash_queries(s, h), nk = flash_keys(s, h);
  for (int64_t i = 0; i < nq; ++i)  // δ_i = dO_i · O_i (0 on fully masked rows: O = 0)
    delta[h * s.tq + i] = float(DotF64(flash_row(s, out, FlashOperand::O, h, i),
                                       flash_row(s, dout, FlashOperand::O, h, i), s.dv));
  const int64_t tiles = detail::flash_tiles(s.tq);
  const int64_t slots = detail::flash_probs_query_tile(s.tq, s.tk);
  // No zeroing pass over dQ, dK, dV (it was ~1.7 % of forward + backward at B = 8,
  // T = 512): each row's first product writes it; only the keys no query sees are zeroed.
  int64_t kv_written = 0;
  for (int64_t q0 = 0; q0 < nq; q0 += kBr)
    BackwardQueryTile(s, q, k, v, lse, dout, delta, dq, dk, dv, h, q0, std::min(kBr, nq - q0),
                      probs ? probs + (h * tiles + q0 / kBr) * slots : nullptr, kv_written);
  for (int64_t j = kv_written; j < nk; ++j) {
    std::fill_n(flash_row(s, dk, FlashOperand::K, h, j), s.dh, 0.0f);
    std::fill_n(flash_row(s, dv, FlashOperand::V, h, j), s.dv, 0.0f);
  }
}

void BackwardImpl(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                  const float* out, const float* lse, const float* dout, float* delta, float* dq,
                  float* dk, float* dv, const float* probs) {
  parallel_for(0, s.bh, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h)
      BackwardHead(s, q, k, v, out, lse, dout, delta, dq, dk, dv, h, probs);
  });
}

// Probabilities of query rows [i0, i0 + nr) of head h, in place: s [nr, tk] (scores,
// rows tk apart) becomes P = exp(s − lse_i) over visible keys, 0 elsewhere.
HWY_INLINE void ProbRows(const FlashAttentionSpec& s, const float* lse, int64_t h, int64_t i0,
                         int64_t nr, float* st) {
  for (int64_t r = 0; r < nr; ++r) {
    float* sr = st + r * s.tk;  // [tk]
    const float l = lse[h * s.tq + i0 + r];
    const int64_t lim = l == -kInf ? 0 : Visible(s, h, i0 + r);
    if (lim > 0) ExpSubSum(sr, lim, l);
    std::fill(sr + lim, sr + s.tk, 0.0f);
  }
}

// Inspection only (need_weights), so one gemm per head is fast enough.
void WeightsImpl(const FlashAttentionSpec& s, const float* q, const float* k, const float* lse,
                 int64_t row_begin, int64_t row_end, float* p) {
  const int64_t rows = row_end - row_begin;
  if (rows <= 0 || s.tk <= 0) return;
  parallel_for(0, s.bh, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      float* ph = p + h * rows * s.tk;  // [rows, tk]
      gemm({false, true, rows, s.tk, s.dh, s.scale, 0.0, s.dh, s.dh, s.tk},
           q + (h * s.tq + row_begin) * s.dh, flash_key_head(s, k, h), ph);
      ProbRows(s, lse, h, row_begin, rows, ph);
    }
  });
}

void TileProductImpl(const TileProduct& p) {
  TileProductRun(p);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);
HWY_EXPORT(WeightsImpl);
HWY_EXPORT(TileProductImpl);

void flash_attention_forward(const FlashAttentionSpec& spec, const float* q, const float* k,
                             const float* v, float* out, float* lse, float* probs) noexcept {
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(spec, q, k, v, out, lse, probs);
}

void flash_attention_backward(const FlashAttentionSpec& spec, const float* q, const float* k,
                              const float* v, const float* out, const float* lse, const float* dout,
                              float* delta, float* dq, float* dk, float* dv,
                              const float* probs) noexcept {
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(spec, q, k, v, out, lse, dout, delta, dq, dk, dv, probs);
}

int64_t flash_attention_probs_size(const FlashAttentionSpec& spec) noexcept {
  return spec.bh * detail::flash_tiles(spec.tq) * detail::flash_probs_query_tile(spec.tq, spec.tk);
}

void flash_attention_weights(const FlashAttentionSpec& spec, const float* q, const float* k,
                             const float* lse, int64_t row_begin, int64_t row_end,
                             float* p) noexcept {
  HWY_DYNAMIC_DISPATCH(WeightsImpl)(spec, q, k, lse, row_begin, row_end, p);
}

void detail::tile_product(const detail::TileProduct& p) noexcept {
  HWY_DYNAMIC_DISPATCH(TileProductImpl)(p);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
