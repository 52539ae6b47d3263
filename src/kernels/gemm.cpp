// gemm() and gemm_batched() on OpenBLAS, parallelised by qkv's pool, not BLAS's.
//
// Why not let OpenBLAS thread: its pthreads would compete with qkv's pool (kernels
// around the GEMM, or GEMMs issued from inside a parallel_for), and its split of the
// work depends on its thread count, so results would change with --threads. Instead
// OpenBLAS is pinned to one thread and a large product is cut into FIXED blocks of C
// (whole rows, or whole columns when C is wide), chosen from (m, n, k) alone. Every
// element of C is then computed by the same single-threaded cblas_sgemm call on the
// same sub-problem whatever the thread count, hence bitwise identical results.
#include "qkv/kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstdint>

#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"

namespace qkv::kernels {
namespace {

// Products below this many multiply-adds (m·n·k) run as one call: splitting them
// would cost more in pool hand-off and repacking than it saves (2^21 ≈ 64·128·256,
// about 40 µs on one AVX-512 core).
constexpr int64_t kSerialWork = int64_t{1} << 21;
// At most this many blocks per product. Enough to balance a handful of threads; more
// would only repack B (row blocks) or A (column blocks) more often.
constexpr int64_t kMaxBlocks = 16;
// Smallest block edge. Each row block re-packs all of op(B) (k·n values) for
// block·n·k multiply-adds, so the repacking overhead is about (FMA/cycle) /
// (block · packed values/cycle) ≈ 32 / (256 · 4) ≈ 3% at 256 rows; measured on an
// AVX-512 core, 128-row blocks cost 10-17% of single-threaded OpenBLAS speed at
// n = k = 1024..2048, 256-row blocks a few %. Dimensions below 2·256 still split in
// two 128+ halves so mid-sized products use two threads.
constexpr int64_t kMinBlock = 256;
constexpr int64_t kMinBlockSmall = 128;
// Block edges are multiples of this so blocks align with OpenBLAS's register tiles.
constexpr int64_t kBlockAlign = 16;

void ensure_openblas_single_threaded() noexcept {
  // Function-local static: initialised exactly once, thread-safely (C++11 magic static).
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// How one product is cut: `count` blocks of `size` rows (by_rows) or columns.
struct Blocking {
  bool by_rows = true;
  int64_t size = 0;   // block edge along the split dimension
  int64_t count = 1;  // number of blocks
};

// Depends on (m, n, k) only -- the determinism guarantee rests on this.
Blocking choose_blocking(int64_t m, int64_t n, int64_t k) noexcept {
  Blocking b;
  b.by_rows = m >= n;
  const int64_t dim = b.by_rows ? m : n;
  b.size = dim;
  const int64_t min_block = dim < 2 * kMinBlock ? kMinBlockSmall : kMinBlock;
  if (m * n * k < 2 * kSerialWork || dim < 2 * min_block) return b;
  const int64_t wanted = std::min(kMaxBlocks, m * n * k / kSerialWork);
  int64_t size = (dim + wanted - 1) / wanted;
  size = (size + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  b.size = std::max(size, min_block);
  b.count = (dim + b.size - 1) / b.size;
  return b;
}

// C = beta·C for the degenerate k == 0 (or alpha == 0) product; beta == 0 writes
// zeros so NaN/Inf already in C are not kept (BLAS convention).
void scale_c(const GemmSpec& s, float* c) noexcept {
  const auto beta = static_cast<float>(s.beta);
  for (int64_t i = 0; i < s.m; ++i) {
    float* row = c + i * s.ldc;  // (n)
    if (s.beta == 0.0)
      std::fill(row, row + s.n, 0.0f);
    else if (s.beta != 1.0)
      for (int64_t j = 0; j < s.n; ++j) row[j] *= beta;
  }
}

// One single-threaded cblas_sgemm on block `blk` (rows or columns [lo, hi) of C).
void run_block(const GemmSpec& s, const Blocking& bl, int64_t blk, const float* a, const float* b,
               float* c) noexcept {
  const int64_t lo = blk * bl.size;
  const int64_t hi = std::min(lo + bl.size, bl.by_rows ? s.m : s.n);
  int64_t m = s.m, n = s.n;
  if (bl.by_rows) {
    m = hi - lo;
    a += s.trans_a ? lo : lo * s.lda;  // rows [lo, hi) of op(A)
    c += lo * s.ldc;
  } else {
    n = hi - lo;
    b += s.trans_b ? lo * s.ldb : lo;  // columns [lo, hi) of op(B)
    c += lo;
  }
  cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
              s.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(s.k), static_cast<float>(s.alpha), a, static_cast<int>(s.lda), b,
              static_cast<int>(s.ldb), static_cast<float>(s.beta), c, static_cast<int>(s.ldc));
}

bool degenerate(const GemmSpec& s) noexcept {
  return s.m <= 0 || s.n <= 0;
}
bool scale_only(const GemmSpec& s) noexcept {
  return s.k <= 0 || s.alpha == 0.0;
}

void check_spec(const GemmSpec& s) noexcept {
  // Leading dimensions must cover the stored row length (cblas would print an error
  // and return without touching C otherwise).
  QKV_DCHECK(s.lda >= std::max<int64_t>(1, s.trans_a ? s.m : s.k));
  QKV_DCHECK(s.ldb >= std::max<int64_t>(1, s.trans_b ? s.k : s.n));
  QKV_DCHECK(s.ldc >= std::max<int64_t>(1, s.n));
  (void)s;
}

}  // namespace

void gemm(const GemmSpec& spec, const float* a, const float* b, float* c) noexcept {
  if (degenerate(spec)) return;
  if (scale_only(spec)) return scale_c(spec, c);
  if (gemm_backend() == GemmBackend::Portable) return gemm_portable(spec, a, b, c);
  check_spec(spec);
  ensure_openblas_single_threaded();
  const Blocking bl = choose_blocking(spec.m, spec.n, spec.k);
  if (bl.count == 1) return run_block(spec, bl, 0, a, b, c);
  parallel_for(0, bl.count, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t blk = lo; blk < hi; ++blk) run_block(spec, bl, blk, a, b, c);
  });
}

void gemm_batched(const GemmSpec& spec, const BatchStrides& strides, const float* a, const float* b,
                  float* c) noexcept {
  if (strides.batch <= 0 || degenerate(spec)) return;
  if (scale_only(spec)) {
    for (int64_t i = 0; i < strides.batch; ++i) scale_c(spec, c + i * strides.c);
    return;
  }
  check_spec(spec);
  if (gemm_backend() == GemmBackend::Portable) {
    // Matrices in parallel; each gemm_portable call then runs its tiles serially (a
    // nested parallel_for), which gives the same result as running them in parallel.
    const int64_t work = std::max<int64_t>(1, spec.m * spec.n * spec.k);
    parallel_for(0, strides.batch, std::max<int64_t>(1, kSerialWork / work),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t i = lo; i < hi; ++i)
                     gemm_portable(spec, a + i * strides.a, b + i * strides.b, c + i * strides.c);
                 });
    return;
  }
  ensure_openblas_single_threaded();
  // Tasks are (matrix, block) pairs. How tasks are grouped into chunks does not affect
  // any result (each block is its own call), so the grain is free to target ~one
  // kSerialWork of multiply-adds per chunk to amortise the pool hand-off.
  const Blocking bl = choose_blocking(spec.m, spec.n, spec.k);
  const int64_t tasks = strides.batch * bl.count;
  const int64_t block_work =
      (bl.by_rows ? bl.size * spec.n : spec.m * bl.size) * spec.k;  // multiply-adds
  const int64_t grain = std::max<int64_t>(1, kSerialWork / std::max<int64_t>(1, block_work));
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t i = t / bl.count, blk = t % bl.count;
      run_block(spec, bl, blk, a + i * strides.a, b + i * strides.b, c + i * strides.c);
    }
  });
}

}  // namespace qkv::kernels
