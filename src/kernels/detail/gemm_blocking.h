// How gemm() and gemm_portable() cut one large product over qkv's pool: blocks of C
// (whole rows, or whole columns when C is wide), each then one single-threaded product.
// gemm() asks for one block per core of the machine, never per --threads thread:
// OpenBLAS's result for an element depends on the block it lies in, so a fixed cut keeps
// results bitwise identical for any thread count. gemm_portable() computes every element
// the same way whatever block holds it, so it cuts by the pool's threads. Private to
// src/kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>

namespace qkv::kernels::detail {

// Products below this many multiply-adds (m·n·k) run as one block. Splitting costs a
// pool hand-off and, per extra block, one more packing of the shared operand; measured
// on an AVX-512 core (OPENBLAS_CORETYPE=SkylakeX), a 256³ product cut in two ran 7 %
// slower on one thread, so only larger products are split.
inline constexpr int64_t kSerialGemmWork = int64_t{1} << 24;  // 256³
// Block edges are at least this long (rows or columns of C).
inline constexpr int64_t kMinGemmBlock = 128;
// Upper bound on blocks per product, whatever the machine.
inline constexpr int64_t kMaxGemmBlocks = 64;
// Block edges are multiples of this so blocks align with the register tiles.
inline constexpr int64_t kGemmBlockAlign = 16;

// How one product is cut: `count` blocks of `size` rows (by_rows) or columns.
struct GemmBlocking {
  bool by_rows = true;
  int64_t size = 0;   // block edge along the split dimension
  int64_t count = 1;  // number of blocks
};

// The machine's cores, at most kMaxGemmBlocks.
inline int64_t gemm_cores() noexcept {
  static const int64_t cores =
      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, kMaxGemmBlocks);
  return cores;
}

// One block per part (by default per core of the machine), fewer for small products.
// Each extra block packs the shared operand once more (1.5-2 % per block at 512 to 2048
// rows with OpenBLAS's SkylakeX core), so the count follows the parts, not a fixed fine
// grain.
inline GemmBlocking choose_gemm_blocking(int64_t m, int64_t n, int64_t k,
                                         int64_t parts = gemm_cores()) noexcept {
  const int64_t cores = std::clamp<int64_t>(parts, 1, kMaxGemmBlocks);
  GemmBlocking b;
  b.by_rows = m >= n;
  const int64_t dim = b.by_rows ? m : n;
  b.size = dim;
  const int64_t wanted = std::min({cores, m * n * k / kSerialGemmWork, dim / kMinGemmBlock});
  if (wanted <= 1) return b;
  const int64_t size = (dim + wanted - 1) / wanted;
  b.size = (size + kGemmBlockAlign - 1) / kGemmBlockAlign * kGemmBlockAlign;
  b.count = (dim + b.size - 1) / b.size;
  return b;
}

}  // namespace qkv::kernels::detail
