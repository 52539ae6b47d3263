// Fused scaled-dot attention (see qkv/kernels/flash_attention.h), Highway dynamic
// dispatch for the row-wise softmax work; the tile products go to kernels::gemm (a
// nested parallel_for inside a chunk runs serially, so each chunk is one thread's work).
//
// Forward, FlashAttention-2 Algorithm 1 (Dao 2023): per (head, tile of kBr queries),
// walk key tiles of kBc keys; S = scale·Q Kᵀ is one kBr × kBc tile on the stack. The
// online softmax keeps per row the running max m and sum l of exp(s − m):
//   m' = max(m, max_j s_j),  α = exp(m − m'),  P̃ = exp(S − m'),
//   l' = α·l + Σ_j P̃_j,  O' = α·O + P̃ V,
// so O is rescaled only when the max moves (α = 1 skips the pass). At the end
// O /= l and lse = m + log l. Every mask here (causal, key lengths) makes each row's
// visible keys a prefix [0, visible_i), so key tiles past the last row's prefix are
// skipped entirely and, in a tile, columns >= visible_i get P = 0.
//
// Backward, FlashAttention-2 Algorithm 2: P is recomputed from lse (P = exp(S − lse)),
//   δ_i = rowsum(dO_i ⊙ O_i),  dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ⊙ (dP − δ),
//   dQ += scale·dS K,  dK += scale·dSᵀ Q,
// one chunk per head, so dQ/dK/dV of a head are written by one thread only.
#include "qkv/kernels/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "qkv/base/thread_pool.h"
#include "qkv/kernels/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/flash_attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "kernels/detail/for_spans-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr float kInf = std::numeric_limits<float>::infinity();
// Tile sizes: kBr queries × kBc keys. The score tile (and dP in backward) is
// kBr·kBc floats = 16 KiB on the stack, small enough to stay in L1/L2 with the K/V tile.
constexpr int64_t kBr = 64;
constexpr int64_t kBc = 64;

HWY_INLINE float RowMax(const float* x, int64_t n) {
  const hn::ScalableTag<float> d;
  auto vmax = hn::Set(d, -kInf);
  float tail = -kInf;
  ForSpans(n, [&](auto dd, int64_t c) {
    const auto s = hn::LoadU(dd, x + c);
    if constexpr (hn::MaxLanes(dd) == 1)
      tail = std::max(tail, hn::GetLane(s));
    else
      vmax = hn::Max(vmax, s);
  });
  return std::max(hn::GetLane(hn::MaxOfLanes(d, vmax)), tail);
}

// x[c] = exp(x[c] − m) over [0, n); returns the sum.
HWY_INLINE float ExpSubSum(float* x, int64_t n, float m) {
  const hn::ScalableTag<float> d;
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

// dp[c] = p[c] · (dp[c] − delta): dS of one row (0 wherever P is 0).
HWY_INLINE void SoftmaxGradRow(const float* p, float* dp, int64_t n, float delta) {
  ForSpans(n, [&](auto dd, int64_t c) {
    const auto g = hn::Sub(hn::LoadU(dd, dp + c), hn::Set(dd, delta));
    hn::StoreU(hn::Mul(hn::LoadU(dd, p + c), g), dd, dp + c);
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

// s [nr, nc] = scale · Q_tile K_tileᵀ, with q [nr, dh], k [nc, dh].
HWY_INLINE void ScoreTile(const FlashAttentionSpec& s, const float* q, const float* k, int64_t nr,
                          int64_t nc, float* out) {
  gemm({false, true, nr, nc, s.dh, s.scale, 0.0, s.dh, s.dh, nc}, q, k, out);
}

// One (head h, queries [q0, q0 + nr)) forward chunk: the online softmax above.
void ForwardTile(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                 float* out, float* lse, int64_t h, int64_t q0, int64_t nr) {
  float st[kBr * kBc];  // score / probability tile [nr, nc]
  float m[kBr], l[kBr];
  const float* qt = q + (h * s.tq + q0) * s.dh;  // [nr, dh]
  const float* kh = k + h * s.tk * s.dh;         // [tk, dh]
  const float* vh = v + h * s.tk * s.dv;         // [tk, dv]
  float* ot = out + (h * s.tq + q0) * s.dv;      // [nr, dv], the accumulator O
  std::fill(ot, ot + nr * s.dv, 0.0f);
  std::fill(m, m + nr, -kInf);
  std::fill(l, l + nr, 0.0f);
  const int64_t kend = TileKeyEnd(s, h, q0, q0 + nr);
  for (int64_t j0 = 0; j0 < kend; j0 += kBc) {
    const int64_t nc = std::min(kBc, kend - j0);
    ScoreTile(s, qt, kh + j0 * s.dh, nr, nc, st);
    for (int64_t r = 0; r < nr; ++r) {
      float* sr = st + r * nc;  // [nc]
      const int64_t lim = std::clamp<int64_t>(Visible(s, h, q0 + r) - j0, 0, nc);
      if (lim > 0) {
        const float mnew = std::max(m[r], RowMax(sr, lim));
        const float alpha = std::exp(m[r] - mnew);  // 0 on the first visible tile
        l[r] = alpha * l[r] + ExpSubSum(sr, lim, mnew);
        if (alpha != 1.0f) ScaleRow(ot + r * s.dv, s.dv, alpha);
        m[r] = mnew;
      }
      std::fill(sr + lim, sr + nc, 0.0f);
    }
    // O += P̃ V_tile:  P̃ [nr, nc], V_tile [nc, dv].
    gemm({false, false, nr, s.dv, nc, 1.0, 1.0, nc, s.dv, s.dv}, st, vh + j0 * s.dv, ot);
  }
  for (int64_t r = 0; r < nr; ++r) {
    float* orow = ot + r * s.dv;
    if (l[r] == 0.0f) {  // no visible key: O = 0 (already), lse = -inf
      lse[h * s.tq + q0 + r] = -kInf;
      continue;
    }
    ScaleRow(orow, s.dv, 1.0f / l[r]);
    lse[h * s.tq + q0 + r] = float(double(m[r]) + std::log(double(l[r])));
  }
}

void ForwardImpl(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                 float* out, float* lse) {
  const int64_t tiles = (s.tq + kBr - 1) / kBr;
  parallel_for(0, s.bh * tiles, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t h = c / tiles, q0 = (c % tiles) * kBr;
      ForwardTile(s, q, k, v, out, lse, h, q0, std::min(kBr, s.tq - q0));
    }
  });
}

// Probabilities of a score tile in place: s [nr, nc] (rows i0.., keys j0..) becomes
// P = exp(s − lse_i) over visible keys, 0 elsewhere and on fully masked rows.
HWY_INLINE void ProbTile(const FlashAttentionSpec& s, const float* lse, int64_t h, int64_t i0,
                         int64_t nr, int64_t j0, int64_t nc, int64_t ld, float* st) {
  for (int64_t r = 0; r < nr; ++r) {
    float* sr = st + r * ld;  // [nc]
    const float l = lse[h * s.tq + i0 + r];
    int64_t lim = std::clamp<int64_t>(Visible(s, h, i0 + r) - j0, 0, nc);
    if (l == -kInf) lim = 0;
    if (lim > 0) ExpSubSum(sr, lim, l);
    std::fill(sr + lim, sr + nc, 0.0f);
  }
}

// One query tile × one key tile of the backward pass of head h.
void BackwardTile(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                  const float* lse, const float* dout, const float* delta, float* dq, float* dk,
                  float* dv, int64_t h, int64_t q0, int64_t nr, int64_t j0, int64_t nc) {
  float pt[kBr * kBc];                               // P tile [nr, nc]
  float dpt[kBr * kBc];                              // dP, then dS, tile [nr, nc]
  const float* qt = q + (h * s.tq + q0) * s.dh;      // [nr, dh]
  const float* dot = dout + (h * s.tq + q0) * s.dv;  // [nr, dv]
  const float* kt = k + (h * s.tk + j0) * s.dh;      // [nc, dh]
  const float* vt = v + (h * s.tk + j0) * s.dv;      // [nc, dv]
  ScoreTile(s, qt, kt, nr, nc, pt);
  ProbTile(s, lse, h, q0, nr, j0, nc, nc, pt);
  // dV_tile += Pᵀ dO:  Pᵀ [nc, nr], dO [nr, dv].
  gemm({true, false, nc, s.dv, nr, 1.0, 1.0, nc, s.dv, s.dv}, pt, dot, dv + (h * s.tk + j0) * s.dv);
  // dP = dO V_tileᵀ [nr, nc].
  gemm({false, true, nr, nc, s.dv, 1.0, 0.0, s.dv, s.dv, nc}, dot, vt, dpt);
  for (int64_t r = 0; r < nr; ++r)
    SoftmaxGradRow(pt + r * nc, dpt + r * nc, nc, delta[h * s.tq + q0 + r]);
  // dQ_tile += scale · dS K_tile;  dK_tile += scale · dSᵀ Q_tile.
  gemm({false, false, nr, s.dh, nc, s.scale, 1.0, nc, s.dh, s.dh}, dpt, kt,
       dq + (h * s.tq + q0) * s.dh);
  gemm({true, false, nc, s.dh, nr, s.scale, 1.0, nc, s.dh, s.dh}, dpt, qt,
       dk + (h * s.tk + j0) * s.dh);
}

void BackwardHead(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                  const float* out, const float* lse, const float* dout, float* delta, float* dq,
                  float* dk, float* dv, int64_t h) {
  std::fill(dq + h * s.tq * s.dh, dq + (h + 1) * s.tq * s.dh, 0.0f);
  std::fill(dk + h * s.tk * s.dh, dk + (h + 1) * s.tk * s.dh, 0.0f);
  std::fill(dv + h * s.tk * s.dv, dv + (h + 1) * s.tk * s.dv, 0.0f);
  for (int64_t i = 0; i < s.tq; ++i) {  // δ_i = dO_i · O_i (0 on fully masked rows: O = 0)
    const float* o = out + (h * s.tq + i) * s.dv;   // [dv]
    const float* g = dout + (h * s.tq + i) * s.dv;  // [dv]
    double acc = 0;
    for (int64_t c = 0; c < s.dv; ++c) acc += double(o[c]) * double(g[c]);
    delta[h * s.tq + i] = float(acc);
  }
  for (int64_t q0 = 0; q0 < s.tq; q0 += kBr) {
    const int64_t nr = std::min(kBr, s.tq - q0);
    const int64_t kend = TileKeyEnd(s, h, q0, q0 + nr);
    for (int64_t j0 = 0; j0 < kend; j0 += kBc)
      BackwardTile(s, q, k, v, lse, dout, delta, dq, dk, dv, h, q0, nr, j0,
                   std::min(kBc, kend - j0));
  }
}

void BackwardImpl(const FlashAttentionSpec& s, const float* q, const float* k, const float* v,
                  const float* out, const float* lse, const float* dout, float* delta, float* dq,
                  float* dk, float* dv) {
  parallel_for(0, s.bh, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h)
      BackwardHead(s, q, k, v, out, lse, dout, delta, dq, dk, dv, h);
  });
}

void WeightsImpl(const FlashAttentionSpec& s, const float* q, const float* k, const float* lse,
                 int64_t row_begin, int64_t row_end, float* p) {
  const int64_t rows = row_end - row_begin;
  if (rows <= 0 || s.tk <= 0) return;
  parallel_for(0, s.bh, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      float* ph = p + h * rows * s.tk;  // [rows, tk]
      ScoreTile(s, q + (h * s.tq + row_begin) * s.dh, k + h * s.tk * s.dh, rows, s.tk, ph);
      ProbTile(s, lse, h, row_begin, rows, 0, s.tk, s.tk, ph);
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);
HWY_EXPORT(WeightsImpl);

void flash_attention_forward(const FlashAttentionSpec& spec, const float* q, const float* k,
                             const float* v, float* out, float* lse) noexcept {
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(spec, q, k, v, out, lse);
}

void flash_attention_backward(const FlashAttentionSpec& spec, const float* q, const float* k,
                              const float* v, const float* out, const float* lse, const float* dout,
                              float* delta, float* dq, float* dk, float* dv) noexcept {
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(spec, q, k, v, out, lse, dout, delta, dq, dk, dv);
}

void flash_attention_weights(const FlashAttentionSpec& spec, const float* q, const float* k,
                             const float* lse, int64_t row_begin, int64_t row_end,
                             float* p) noexcept {
  HWY_DYNAMIC_DISPATCH(WeightsImpl)(spec, q, k, lse, row_begin, row_end, p);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
