// gemm() and gemm_batched() on OpenBLAS, parallelised by qkv's pool, not BLAS's.
//
// Why not let OpenBLAS thread: its pthreads would compete with qkv's pool (kernels
// around the GEMM, or GEMMs issued from inside a parallel_for), and its split of the
// work depends on its thread count, so results would change with --threads. Instead
// OpenBLAS is pinned to one thread and a large product is cut into FIXED blocks of C
// (whole rows, or whole columns when C is wide), chosen from (m, n, k) and the
// machine's core count, never from the thread count. Every
// element of C is then computed by the same single-threaded cblas_sgemm call on the
// same sub-problem whatever the thread count, hence bitwise identical results.
#include "qkv/kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstdint>

#include "kernels/detail/gemm_blocking.h"
#include "kernels/detail/op_a_sums.h"
#include "kernels/detail/parallel_rows.h"
#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/elementwise.h"
#include "qkv/kernels/reduce.h"

namespace qkv::kernels {
namespace {

// Elements per chunk of the OpenBLAS backend's passes over C's rows (the bias fill, the
// ReLU epilogues).
constexpr int64_t kRowPassGrain = int64_t{1} << 14;

// gemm_batched groups small matrices into chunks of about this many multiply-adds, to
// amortise the pool hand-off (2^21 ≈ 64·128·256, about 40 µs on one AVX-512 core).
constexpr int64_t kBatchChunkWork = int64_t{1} << 21;

void ensure_openblas_single_threaded() noexcept {
  // Function-local static: initialised exactly once, thread-safely (C++11 magic static).
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

using detail::choose_gemm_blocking;
using Blocking = detail::GemmBlocking;

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
  const Blocking bl = choose_gemm_blocking(spec.m, spec.n, spec.k);
  if (bl.count == 1) return run_block(spec, bl, 0, a, b, c);
  parallel_for(0, bl.count, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t blk = lo; blk < hi; ++blk) run_block(spec, bl, blk, a, b, c);
  });
}

void detail::sum_rows_of_op_a(const GemmSpec& s, const float* a, float* sums) noexcept {
  if (s.m <= 0) return;
  if (s.trans_a && s.lda == s.m) return sum_cols(a, sums, std::max<int64_t>(s.k, 0), s.m);
  std::fill(sums, sums + s.m, 0.0f);
  for (int64_t p = 0; p < s.k; ++p)
    for (int64_t i = 0; i < s.m; ++i) sums[i] += s.trans_a ? a[p * s.lda + i] : a[i * s.lda + p];
}

void gemm_with_bias(const GemmSpec& spec, const float* a, const float* b, const float* bias,
                    float* c) noexcept {
  if (gemm_backend() == GemmBackend::Portable) return gemm_portable_with_bias(spec, a, b, bias, c);
  if (spec.m <= 0 || spec.n <= 0) return;
  // The rows filled on the pool, as gemm() splits its products.
  detail::parallel_rows(spec.m, spec.n, kRowPassGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::copy(bias, bias + spec.n, c + r * spec.ldc);
  });
  GemmSpec added = spec;
  added.beta = 1.0;
  gemm(added, a, b, c);
}

// The OpenBLAS backend's epilogues: the product, then the ReLU kernels on C's rows, on
// the pool as gemm_with_bias fills them (rows are independent: any cut gives the same bits).
void gemm_with_bias_relu(const GemmSpec& spec, const float* a, const float* b, const float* bias,
                         float* c) noexcept {
  if (gemm_backend() == GemmBackend::Portable)
    return gemm_portable_with_bias_relu(spec, a, b, bias, c);
  if (spec.m <= 0 || spec.n <= 0) return;
  gemm_with_bias(spec, a, b, bias, c);
  detail::parallel_rows(spec.m, spec.n, kRowPassGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = c + r * spec.ldc;
      activation_forward(Activation::Relu, row, row, spec.n);
    }
  });
}

void gemm_gated(const GemmSpec& spec, const float* a, const float* b, const float* gate,
                int64_t ldg, float* c) noexcept {
  if (gemm_backend() == GemmBackend::Portable) return gemm_portable_gated(spec, a, b, gate, ldg, c);
  if (spec.m <= 0 || spec.n <= 0) return;
  GemmSpec plain = spec;
  plain.beta = 0.0;
  gemm(plain, a, b, c);
  detail::parallel_rows(spec.m, spec.n, kRowPassGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // ReLU's backward with x = y = the gate
      const float* g = gate + r * ldg;
      float* row = c + r * spec.ldc;
      activation_backward(Activation::Relu, g, g, row, row, spec.n);
    }
  });
}

void gemm_with_a_row_sums(const GemmSpec& spec, const float* a, const float* b, float* c,
                          float* a_row_sums) noexcept {
  if (gemm_backend() == GemmBackend::Portable)
    return gemm_portable_with_a_row_sums(spec, a, b, c, a_row_sums);
  gemm(spec, a, b, c);
  detail::sum_rows_of_op_a(spec, a, a_row_sums);
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
    parallel_for(0, strides.batch, std::max<int64_t>(1, kBatchChunkWork / work),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t i = lo; i < hi; ++i)
                     gemm_portable(spec, a + i * strides.a, b + i * strides.b, c + i * strides.c);
                 });
    return;
  }
  ensure_openblas_single_threaded();
  // Tasks are (matrix, block) pairs. How tasks are grouped into chunks does not affect
  // any result (each block is its own call), so the grain is free to target about
  // kBatchChunkWork multiply-adds per chunk.
  const Blocking bl = choose_gemm_blocking(spec.m, spec.n, spec.k);
  const int64_t tasks = strides.batch * bl.count;
  const int64_t block_work =
      (bl.by_rows ? bl.size * spec.n : spec.m * bl.size) * spec.k;  // multiply-adds
  const int64_t grain = std::max<int64_t>(1, kBatchChunkWork / std::max<int64_t>(1, block_work));
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t i = t / bl.count, blk = t % bl.count;
      run_block(spec, bl, blk, a + i * strides.a, b + i * strides.b, c + i * strides.c);
    }
  });
}

// The reference twin's one copy (see the extern declarations in reference/gemm.h).
template void ref::gemm<float>(const GemmSpec&, const float*, const float*, float*) noexcept;
template void ref::gemm<double>(const GemmSpec&, const double*, const double*, double*) noexcept;

}  // namespace qkv::kernels
