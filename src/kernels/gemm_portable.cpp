// gemm_portable(): qkv's own SGEMM, on the register-tiled micro-kernel that the packed
// and flash kernels share (detail/tile_product-inl.h: 12 rows × 2 vectors on AVX-512,
// 6 × 2 on AVX2).
//
// The Goto/BLIS structure (Goto & van de Geijn, "Anatomy of High-Performance Matrix
// Multiplication", TOMS 2008), reduced to what this micro-kernel needs. For each column
// block of C (at most kNC wide) and each kKC-deep slice of k, op(B)'s slice is packed once
// into panels 2 vectors wide ([kc, 2·lanes], contiguous, zero-padded), then every kMC-row
// block of C copies its rows of op(A) dense and multiplies them by the panels one after
// another.
//
// Why this shape (measured on an AVX-512 Xeon VM, 1 thread, bench/bench_gemm.cpp): the
// earlier version packed op(B) again for every 96 × 256 tile of C and ran its own
// micro-kernel; that packing was a quarter of the time (72-105 GFLOP/s where OpenBLAS's
// SkylakeX kernels ran 113-138). Packed once per column block it runs 118-150 on the
// Transformer update's products (BM_QkvGemmTraining), and a training update at 1 thread
// is 5-8 % faster than on OpenBLAS (bench/README.md).
//
// Threads: a large product is cut into one block of C per thread of the pool
// (detail/gemm_blocking.h); each block is one serial product with its own packing
// buffer. Every C element is the same sequence of operations whatever block, thread or
// register tile computes it (an in-order FMA chain over each kKC slice, the slices added
// into C in order), so results do not depend on the cut, hence not on the thread count
// (Gemm.BitwiseIdenticalForOneAndTwoThreads, where the cut differs).
//
// Memory: the packed block is kKC × kNC floats (2 MiB) per thread that runs a product,
// allocated at its first product and kept (the one allocation in src/kernels: too large
// for a stack). A thread that cannot have it computes its block with ref::gemm.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "kernels/detail/gemm_blocking.h"
#include "kernels/detail/gemm_portable_testing.h"
#include "kernels/detail/op_a_sums.h"
#include "kernels/detail/tile_product.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/gemm.h"

#ifndef QKV_GEMM_PORTABLE_FLAG_DEFINED
#define QKV_GEMM_PORTABLE_FLAG_DEFINED
namespace qkv::kernels::detail {
// Set only by deny_gemm_portable_buffers_for_testing.
inline std::atomic<bool> gemm_portable_buffers_denied{false};

// What the product does to C's finished elements besides alpha·AB (tile_product.h's
// bias, relu and gate; beta is 0 whenever one is set).
struct GemmEpilogue {
  const float* bias = nullptr;  // [n]
  bool relu = false;
  const float* gate = nullptr;  // [m, n], rows ldg apart
  int64_t ldg = 0;
};
}  // namespace qkv::kernels::detail
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gemm_portable.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.
#include <hwy/highway.h>

#include "kernels/detail/tile_product-inl.h"
#include "kernels/detail/transpose-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(DF()));
// A panel of packed op(B): the micro-kernel's register tile is 2 vectors wide.
constexpr int64_t kNR = 2 * kLanes;
// k slice: a [kKC, kNR] panel is 64 KiB with AVX-512 (L1 and L2), and C is read and
// written once per slice. Measured against 256 and 384 (and kMC, kNC together) on the
// Transformer update's products: 512 was best or within the noise on all of them.
constexpr int64_t kKC = 512;
// Rows of C per micro-kernel pass over the packed columns: their A block (kMC × kKC,
// 96 KiB) stays in L2 across the panels. 48 against 72 and 96: within the noise.
constexpr int64_t kMC = 48;
// Columns of C packed at once (a multiple of kNR on every target): the packed block is
// kKC × kNC floats, 2 MiB. 1024 keeps the Transformer's FFN (1024 wide) in one block,
// so A is read once; 384 and 768 were 5-8 % slower on those products.
constexpr int64_t kNC = 1024;
// A's rows copied kc + kPad floats apart: never 4 KiB apart (L1 set conflicts).
constexpr int64_t kPad = 16;
// A block of at most this many rows reads a stored-(k, n) B in place instead of packing
// it: each element of B is then used by so few rows that the packing pass (a read and a
// write of the slice) cost about as much as the product. Decoding's per-row products
// (an rnn's attention context, [1, Ts] × [Ts, 2H] for each of batch × beam rows) spent
// 6 % of the Bahdanau GRU's beam 4 in PackB. The micro-kernel reads B's rows at any
// stride and masks the last partial panel, so every element is the same FMA chain as
// from the packed panels: the same bits.
constexpr int64_t kDirectRows = 4;

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into kNR-column panels:
// dst[panel][p][j] = op(B)[p0 + p, j0 + panel·kNR + j], zero columns past nc.
void PackB(const GemmSpec& s, const float* b, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
           float* HWY_RESTRICT dst) {
  const int64_t panels = (nc + kNR - 1) / kNR, full = nc / kNR;
  if (!s.trans_b) {  // B stored (k, n): each row of the slice read once, in order, and
                     // dealt out to the panels (panel by panel, the rows would be read
                     // 32 times over: a quarter of the time of a dW = dYᵀ·X product)
    const DF d;
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = b + (p0 + p) * s.ldb + j0;  // (nc)
      for (int64_t q = 0; q < full; ++q)
        for (int64_t v = 0; v < kNR; v += kLanes)
          hn::Store(hn::LoadU(d, src + q * kNR + v), d, dst + (q * kc + p) * kNR + v);
      if (full < panels) {
        float* row = dst + (full * kc + p) * kNR;
        const int64_t cols = nc - full * kNR;
        std::memcpy(row, src + full * kNR, size_t(cols) * sizeof(float));
        std::fill(row + cols, row + kNR, 0.0f);
      }
    }
    return;
  }
  // B stored (n, k): op(B)'s columns are B's rows, transposed into the panels
  // (detail/transpose-inl.h).
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t jp = q * kNR;
    TransposeIntoPanel(b + (j0 + jp) * s.ldb + p0, s.ldb, std::min(kNR, nc - jp), kc, dst + jp * kc,
                       kNR);
  }
}

// The packed op(B) block: kKC × kNC floats per thread (2 MiB), allocated at
// its first product and kept, 64-byte aligned (an AVX-512 load of a panel row then never
// splits a cache line: unaligned, the products ran 8-10 % slower). nullptr if that
// allocation failed.
float* PackedBlockBuffer() {
  if (detail::gemm_portable_buffers_denied.load(std::memory_order_relaxed)) return nullptr;
  constexpr size_t kAlign = 64;
  thread_local std::unique_ptr<float[]> storage(
      new (std::nothrow) float[kKC * kNC + kAlign / sizeof(float)]);
  if (!storage) return nullptr;
  const auto address = reinterpret_cast<uintptr_t>(storage.get());
  return reinterpret_cast<float*>((address + kAlign - 1) / kAlign * kAlign);
}

// sums[i] (+)= Σ_p x[p, i] for x [rows, cols] dense (A's copied block, in L1), each
// column summed in row order onto its running value (from 0 when `first`): the same
// operations as kernels::sum_cols over all of A's rows, so the same bits.
void AddColumns(const float* HWY_RESTRICT x, int64_t rows, int64_t cols, bool first,
                float* HWY_RESTRICT sums) {
  const DF d;
  int64_t i = 0;
  for (; i + kLanes <= cols; i += kLanes) {
    auto acc = first ? hn::Zero(d) : hn::LoadU(d, sums + i);
    for (int64_t p = 0; p < rows; ++p) acc = hn::Add(acc, hn::LoadU(d, x + p * cols + i));
    hn::StoreU(acc, d, sums + i);
  }
  for (; i < cols; ++i) {
    float acc = first ? 0.0f : sums[i];
    for (int64_t p = 0; p < rows; ++p) acc += x[p * cols + i];
    sums[i] = acc;
  }
}

// Where RowBlock reads op(B)'s kc-slice for columns j0 on: panel jp (a multiple of kNR)
// starts at b + jp·col_step and its rows lie ldb apart: packed (PackB) col_step = kc and
// ldb = kNR; in place (stored (k, n)) col_step = 1 and ldb = B's own.
struct BSlice {
  const float* b = nullptr;
  int64_t col_step = 0, ldb = 0;
};

// The part of op(A) the next RowBlock copies: rows of `floats` floats, `ld` apart (none
// when at is nullptr).
struct NextABlock {
  const float* at = nullptr;
  int64_t rows = 0, floats = 0, ld = 0;
};

// The NextABlock of the rows [i, i + mc) of op(A)'s kc-slice at p0.
NextABlock ABlockAt(const GemmSpec& s, const float* a, int64_t i, int64_t mc, int64_t p0,
                    int64_t kc) {
  if (s.trans_a) return {a + p0 * s.lda + i, kc, mc, s.lda};
  return {a + i * s.lda + p0, mc, kc, s.lda};
}

// One kc-slice of the product for C's rows [i0, i0 + mc) and the nc columns of bs
// (columns j0 on of C). `next`'s lines are fetched during the products (its rows dealt
// out over the panels), so that the next block's copy of A finds them in cache: the copy
// was 4.6 % of a Transformer update at 1 thread, stalled on A's misses.
// ep: the bias is added to the first slice's results, the ReLU and the gate applied to
// the last slice's (when it is also the first, in that order).
void RowBlock(const GemmSpec& s, const float* a, const BSlice& bs, float* c, int64_t i0, int64_t mc,
              int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* a_row_sums,
              const NextABlock& next, const detail::GemmEpilogue& ep) {
  // op(A)'s block copied dense as [kc, mc]: the micro-kernel's broadcasts of one k step
  // then lie in one or two cache lines, read in order. In place, A's rows lie lda apart:
  // a 4 KiB lda maps them onto the same L1 sets (dW = dYᵀ·X ran at 57-92 GFLOP/s), and
  // mc rows are more streams than the prefetchers follow when A comes from memory.
  alignas(64) float apack[(kKC + kPad) * kMC];
  int64_t ars = 1, ats = mc;
  if (s.trans_a) {
    for (int64_t p = 0; p < kc; ++p)
      std::memcpy(apack + p * mc, a + (p0 + p) * s.lda + i0, size_t(mc) * sizeof(float));
    if (a_row_sums != nullptr) AddColumns(apack, kc, mc, p0 == 0, a_row_sums + i0);
  } else {
    ars = kc + kPad, ats = 1;
    for (int64_t r = 0; r < mc; ++r)
      std::memcpy(apack + r * ars, a + (i0 + r) * s.lda + p0, size_t(kc) * sizeof(float));
  }
  detail::TileProduct t;
  t.m = mc;
  t.k = kc;
  t.a = apack;
  t.ars = ars;
  t.ats = ats;
  t.ldb = bs.ldb;
  t.ldc = s.ldc;
  t.alpha = static_cast<float>(s.alpha);
  t.accumulate = p0 > 0 || s.beta != 0.0;
  t.prefetch_floats = next.floats;
  t.prefetch_ld = next.ld;
  const bool last_slice = p0 + kc == s.k;
  t.relu = ep.relu && last_slice;
  t.ldg = ep.ldg;
  const int64_t panels = (nc + kNR - 1) / kNR;
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t jp = q * kNR;
    t.n = std::min(kNR, nc - jp);
    t.b = bs.b + jp * bs.col_step;
    t.c = c + i0 * s.ldc + j0 + jp;
    t.bias = ep.bias != nullptr && p0 == 0 ? ep.bias + j0 + jp : nullptr;
    t.gate = ep.gate != nullptr && last_slice ? ep.gate + i0 * ep.ldg + j0 + jp : nullptr;
    const int64_t r0 = q * next.rows / panels, r1 = (q + 1) * next.rows / panels;
    t.prefetch = next.at != nullptr && r1 > r0 ? next.at + r0 * next.ld : nullptr;
    t.prefetch_rows = r1 - r0;
    TileProductRun(t);
  }
}

// C[i0 : i1, j0 : j1] over all of k, on the calling thread: for each column block (at
// most kNC wide) and each kKC slice of k, op(B)'s slice is packed once, then every kMC-row
// block of A multiplies it.
void SerialBlock(const GemmSpec& s, const float* a, const float* b, float* c, int64_t i0,
                 int64_t i1, int64_t j0, int64_t j1, float* bpack, float* a_row_sums,
                 const detail::GemmEpilogue& ep) {
  for (int64_t jc = j0; jc < j1; jc += kNC) {
    const int64_t nc = std::min(kNC, j1 - jc);
    for (int64_t p0 = 0; p0 < s.k; p0 += kKC) {
      const int64_t kc = std::min(kKC, s.k - p0);
      // A's rows are copied once per column block: their sums are taken in the first.
      float* sums = jc == 0 ? a_row_sums : nullptr;
      if (!s.trans_b && i1 - i0 <= kDirectRows) {
        // The whole panels in place; a partial last one packed (zero-padded), since a
        // masked load may read a whole vector on some targets, past the end of B.
        const int64_t whole = nc / kNR * kNR;
        if (whole > 0)
          RowBlock(s, a, {b + p0 * s.ldb + jc, 1, s.ldb}, c, i0, i1 - i0, p0, kc, jc, whole, sums,
                   {}, ep);
        if (whole < nc) {
          PackB(s, b, p0, kc, jc + whole, nc - whole, bpack);
          RowBlock(s, a, {bpack, kc, kNR}, c, i0, i1 - i0, p0, kc, jc + whole, nc - whole,
                   whole > 0 ? nullptr : sums, {}, ep);
        }
        continue;
      }
      PackB(s, b, p0, kc, jc, nc, bpack);
      for (int64_t i = i0; i < i1; i += kMC) {
        // The next block copied: the following rows, else the first rows of the next
        // slice of k (or of the next column block's first slice).
        const int64_t mc = std::min(kMC, i1 - i), after = i + mc;
        NextABlock next;
        if (after < i1)
          next = ABlockAt(s, a, after, std::min(kMC, i1 - after), p0, kc);
        else if (p0 + kc < s.k)
          next = ABlockAt(s, a, i0, std::min(kMC, i1 - i0), p0 + kc, std::min(kKC, s.k - p0 - kc));
        else if (jc + nc < j1)
          next = ABlockAt(s, a, i0, std::min(kMC, i1 - i0), 0, std::min(kKC, s.k));
        RowBlock(s, a, {bpack, kc, kNR}, c, i, mc, p0, kc, jc, nc, sums, next, ep);
      }
    }
  }
}

// The same block by ref::gemm, for a thread that could not have its packing buffer
// (slow, but the product is still right). C's scaling by beta is already done.
void ReferenceBlock(const GemmSpec& s, const float* a, const float* b, float* c, int64_t i0,
                    int64_t i1, int64_t j0, int64_t j1, float* a_row_sums,
                    const detail::GemmEpilogue& ep) {
  GemmSpec part = s;
  part.m = i1 - i0;
  part.n = j1 - j0;
  part.beta = s.beta == 0.0 && ep.bias == nullptr ? 0.0 : 1.0;
  if (ep.bias != nullptr)  // the rows start as the bias, as in ref::gemm_with_bias
    for (int64_t i = i0; i < i1; ++i) std::copy(ep.bias + j0, ep.bias + j1, c + i * s.ldc + j0);
  const float* a_part = s.trans_a ? a + i0 : a + i0 * s.lda;
  if (a_row_sums != nullptr && j0 == 0) detail::sum_rows_of_op_a(part, a_part, a_row_sums + i0);
  ref::gemm(part, a_part, s.trans_b ? b + j0 * s.ldb : b + j0, c + i0 * s.ldc + j0);
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      float& x = c[i * s.ldc + j];
      if (ep.relu && !(x > 0.0f)) x = 0.0f;
      if (ep.gate != nullptr && !(ep.gate[i * ep.ldg + j] > 0.0f)) x = 0.0f;
    }
}

// a_row_sums: nullptr, or (s.trans_a) a_row_sums[i] = Σ_p op(A)[i, p] too. ep: applied to
// C's finished elements (s.beta = 0 when it has any part).
void GemmPortableImpl(const GemmSpec& s, const float* a, const float* b, float* c,
                      float* a_row_sums, const detail::GemmEpilogue& ep) {
  if (s.beta != 0.0 && s.beta != 1.0) {  // C = beta·C first; every slice then adds to it
    const auto beta = static_cast<float>(s.beta);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) c[i * s.ldc + j] *= beta;
  }
  // One block of C per thread of the pool (detail/gemm_blocking.h), each a serial
  // product with its own packing, so the threads never wait for each other within a
  // product (sharing one packed slice between the threads cost two pool meetings per
  // slice: 2 threads ran 6 % slower than OpenBLAS's blocks). Per thread, not per core as
  // for OpenBLAS: no element's result depends on the cut, and on one thread an uncut
  // product packs each operand once (cut per core, 1 thread ran 3 % slower).
  int64_t parts = 1;
  try {
    if (!in_parallel_region()) parts = num_threads();
  } catch (...) {  // the pool could not start (a malformed QKV_NUM_THREADS): one part
  }
  const detail::GemmBlocking bl = detail::choose_gemm_blocking(s.m, s.n, s.k, parts);
  auto run = [&](int64_t lo, int64_t hi) {
    float* bpack = PackedBlockBuffer();
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t first = blk * bl.size;
      const int64_t last = std::min(first + bl.size, bl.by_rows ? s.m : s.n);
      const int64_t i0 = bl.by_rows ? first : 0, i1 = bl.by_rows ? last : s.m;
      const int64_t j0 = bl.by_rows ? 0 : first, j1 = bl.by_rows ? s.n : last;
      // Column blocks after the first copy the same rows of A: one block sums them.
      float* sums = j0 == 0 ? a_row_sums : nullptr;
      if (bpack)
        SerialBlock(s, a, b, c, i0, i1, j0, j1, bpack, sums, ep);
      else
        ReferenceBlock(s, a, b, c, i0, i1, j0, j1, sums, ep);
    }
  };
  if (bl.count == 1)
    run(0, 1);
  else
    parallel_for(0, bl.count, 1, run);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(GemmPortableImpl);

void detail::deny_gemm_portable_buffers_for_testing(bool deny) noexcept {
  gemm_portable_buffers_denied.store(deny);
}

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
  HWY_DYNAMIC_DISPATCH(GemmPortableImpl)(spec, a, b, c, nullptr, {});
}

void gemm_portable_with_bias(const GemmSpec& spec, const float* a, const float* b,
                             const float* bias, float* c) noexcept {
  if (spec.m <= 0 || spec.n <= 0) return;
  GemmSpec s = spec;
  s.beta = 0.0;
  if (s.k <= 0 || s.alpha == 0.0) {  // C = bias
    for (int64_t i = 0; i < s.m; ++i) std::copy(bias, bias + s.n, c + i * s.ldc);
    return;
  }
  HWY_DYNAMIC_DISPATCH(GemmPortableImpl)(s, a, b, c, nullptr, {.bias = bias});
}

void gemm_portable_with_bias_relu(const GemmSpec& spec, const float* a, const float* b,
                                  const float* bias, float* c) noexcept {
  if (spec.m <= 0 || spec.n <= 0) return;
  GemmSpec s = spec;
  s.beta = 0.0;
  if (s.k <= 0 || s.alpha == 0.0) {  // C = relu(bias)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) c[i * s.ldc + j] = bias[j] > 0.0f ? bias[j] : 0.0f;
    return;
  }
  HWY_DYNAMIC_DISPATCH(GemmPortableImpl)(s, a, b, c, nullptr, {.bias = bias, .relu = true});
}

void gemm_portable_gated(const GemmSpec& spec, const float* a, const float* b, const float* gate,
                         int64_t ldg, float* c) noexcept {
  if (spec.m <= 0 || spec.n <= 0) return;
  GemmSpec s = spec;
  s.beta = 0.0;
  if (s.k <= 0 || s.alpha == 0.0) {  // every product 0, gated or not
    for (int64_t i = 0; i < s.m; ++i) std::fill(c + i * s.ldc, c + i * s.ldc + s.n, 0.0f);
    return;
  }
  HWY_DYNAMIC_DISPATCH(GemmPortableImpl)(s, a, b, c, nullptr, {.gate = gate, .ldg = ldg});
}

void gemm_portable_with_a_row_sums(const GemmSpec& spec, const float* a, const float* b, float* c,
                                   float* a_row_sums) noexcept {
  if (spec.m <= 0) return;
  if (spec.n <= 0 || spec.k <= 0 || spec.alpha == 0.0 || !spec.trans_a) {
    gemm_portable(spec, a, b, c);
    detail::sum_rows_of_op_a(spec, a, a_row_sums);
    return;
  }
  HWY_DYNAMIC_DISPATCH(GemmPortableImpl)(spec, a, b, c, a_row_sums, {});
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
