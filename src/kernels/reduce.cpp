// Reductions (see qkv/kernels/reduce.h), Highway dynamic dispatch.
//
// Determinism: a global reduction cuts [0, n) into chunks whose size depends only on n,
// reduces each chunk in a fixed order (4 vector accumulators, then the lanes, then the
// tail) into a stack array, and adds the partials in chunk order. So the result is the
// same for any thread count (it may differ between SIMD targets: lane counts differ).
#include "qkv/kernels/reduce.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/reduce.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Minimum elements per parallel chunk (64 KiB of floats), and a cap on the number of
// chunks so partials fit in a stack array: beyond kMaxChunks·kGrain the grain grows.
constexpr int64_t kGrain = int64_t{1} << 14;
constexpr int64_t kMaxChunks = 64;

// Reduces [begin, end) of one or two streams. Op supplies:
//   init(d) -> V, step(d, acc, i) -> V (folds the lanes at index i), combine(a, b) -> V,
//   and lanes are folded with the target-independent final reduction `fold`.
// Four independent accumulators hide the add latency (4 cycles on AVX2/AVX-512).
template <class Init, class Step, class Combine, class Fold>
HWY_INLINE float Reduce(int64_t begin, int64_t end, const Init& init, const Step& step,
                        const Combine& combine, const Fold& fold) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  auto a0 = init(d), a1 = init(d), a2 = init(d), a3 = init(d);
  int64_t i = begin;
  for (; i + 4 * lanes <= end; i += 4 * lanes) {
    a0 = step(d, a0, i);
    a1 = step(d, a1, i + lanes);
    a2 = step(d, a2, i + 2 * lanes);
    a3 = step(d, a3, i + 3 * lanes);
  }
  for (; i + lanes <= end; i += lanes) a0 = step(d, a0, i);
  float acc = fold(d, combine(combine(a0, a1), combine(a2, a3)));
  auto tail = init(d1);
  for (; i < end; ++i) tail = step(d1, tail, i);
  return fold(d1, combine(hn::Set(d1, acc), tail));
}

template <class Init, class Step, class Combine, class Fold>
float ReduceAll(int64_t n, float identity, const Init& init, const Step& step,
                const Combine& combine, const Fold& fold, float (*join)(float, float)) {
  if (n <= 0) return identity;
  const int64_t grain = std::max(kGrain, (n + kMaxChunks - 1) / kMaxChunks);
  if (n <= grain) return Reduce(0, n, init, step, combine, fold);
  float partial[kMaxChunks];
  parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
    partial[lo / grain] = Reduce(lo, hi, init, step, combine, fold);
  });
  float total = partial[0];
  const int64_t chunks = num_chunks(0, n, grain);
  for (int64_t c = 1; c < chunks; ++c) total = join(total, partial[c]);
  return total;
}

constexpr auto kZero = [](auto d) { return hn::Zero(d); };
constexpr auto kAdd = [](auto a, auto b) { return hn::Add(a, b); };
constexpr auto kSumLanes = [](auto d, auto v) { return hn::GetLane(hn::SumOfLanes(d, v)); };

HWY_INLINE float SumRange(const float* x, int64_t begin, int64_t end) {
  return Reduce(
      begin, end, kZero,
      [x](auto d, auto acc, int64_t i) { return hn::Add(acc, hn::LoadU(d, x + i)); }, kAdd,
      kSumLanes);
}

float SumImpl(const float* x, int64_t n) {
  return ReduceAll(
      n, 0.0f, kZero,
      [x](auto d, auto acc, int64_t i) { return hn::Add(acc, hn::LoadU(d, x + i)); }, kAdd,
      kSumLanes, [](float a, float b) { return a + b; });
}

float DotImpl(const float* a, const float* b, int64_t n) {
  return ReduceAll(
      n, 0.0f, kZero,
      [a, b](auto d, auto acc, int64_t i) {
        return hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc);
      },
      kAdd, kSumLanes, [](float p, float q) { return p + q; });
}

float MaxImpl(const float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  return ReduceAll(
      n, kNegInf, [](auto d) { return hn::Set(d, kNegInf); },
      [x](auto d, auto acc, int64_t i) { return hn::Max(acc, hn::LoadU(d, x + i)); },
      [](auto p, auto q) { return hn::Max(p, q); },
      [](auto d, auto v) { return hn::GetLane(hn::MaxOfLanes(d, v)); },
      [](float p, float q) { return q > p ? q : p; });
}

// x (rows, cols) -> y (rows). Rows are independent; parallel over rows.
void SumRowsImpl(const float* x, float* y, int64_t rows, int64_t cols) {
  if (rows <= 0) return;
  const int64_t grain = cols >= kGrain ? 1 : kGrain / std::max<int64_t>(cols, 1);
  auto fn = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) y[r] = SumRange(x + r * cols, 0, cols);
  };
  if (rows <= grain)
    fn(0, rows);
  else
    parallel_for(0, rows, grain, fn);
}

// y[c0:c1] = Σ_r x[r, c0:c1]: y stays in L1 while rows stream through contiguously.
// Each column is summed over rows in row order, whatever the column split, so the
// column-parallel split below cannot change any result.
void SumColsRange(const float* x, float* y, int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d));
  for (int64_t c = c0; c < c1; ++c) y[c] = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    int64_t c = c0;
    for (; c + lanes <= c1; c += lanes)
      hn::StoreU(hn::Add(hn::LoadU(d, y + c), hn::LoadU(d, xr + c)), d, y + c);
    for (; c < c1; ++c) hn::StoreU(hn::Add(hn::LoadU(d1, y + c), hn::LoadU(d1, xr + c)), d1, y + c);
  }
}

void SumColsImpl(const float* x, float* y, int64_t rows, int64_t cols) {
  if (cols <= 0) return;
  // Column blocks of >= 64 floats (whole cache lines), at most ~16 of them.
  const int64_t block = std::max<int64_t>(64, (cols / 16 + 15) / 16 * 16);
  if (rows * cols < 2 * kGrain || cols <= block) {
    SumColsRange(x, y, rows, cols, 0, cols);
    return;
  }
  parallel_for(0, cols, block,
               [&](int64_t c0, int64_t c1) { SumColsRange(x, y, rows, cols, c0, c1); });
}

// The first i in [0, n) where match(x[i]) holds (n if none): four vectors per test while
// none matches, then the exact lane from single vectors, then the scalar tail.
template <class VecMatch, class ScalarMatch>
HWY_INLINE int64_t FindFirst(const float* x, int64_t n, const VecMatch& match,
                             const ScalarMatch& scalar_match) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const auto m01 = hn::Or(match(d, hn::LoadU(d, x + i)), match(d, hn::LoadU(d, x + i + lanes)));
    const auto m23 = hn::Or(match(d, hn::LoadU(d, x + i + 2 * lanes)),
                            match(d, hn::LoadU(d, x + i + 3 * lanes)));
    if (!hn::AllFalse(d, hn::Or(m01, m23))) break;
  }
  for (; i + lanes <= n; i += lanes) {
    const intptr_t lane = hn::FindFirstTrue(d, match(d, hn::LoadU(d, x + i)));
    if (lane >= 0) return i + lane;
  }
  for (; i < n; ++i)
    if (scalar_match(x[i])) return i;
  return n;
}

int64_t FindNotBelowImpl(const float* x, int64_t n, float t) {
  return FindFirst(
      x, n, [t](auto d, auto v) { return hn::Not(hn::Lt(v, hn::Set(d, t))); },
      [t](float v) { return !(v < t); });
}

int64_t FindAboveImpl(const float* x, int64_t n, float t) {
  return FindFirst(
      x, n, [t](auto d, auto v) { return hn::Gt(v, hn::Set(d, t)); },
      [t](float v) { return v > t; });
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(SumImpl);
HWY_EXPORT(DotImpl);
HWY_EXPORT(MaxImpl);
HWY_EXPORT(SumRowsImpl);
HWY_EXPORT(SumColsImpl);
HWY_EXPORT(FindNotBelowImpl);
HWY_EXPORT(FindAboveImpl);

float sum(const float* x, int64_t n) noexcept {
  return HWY_DYNAMIC_DISPATCH(SumImpl)(x, n);
}
float dot(const float* a, const float* b, int64_t n) noexcept {
  return HWY_DYNAMIC_DISPATCH(DotImpl)(a, b, n);
}
float max(const float* x, int64_t n) noexcept {
  return HWY_DYNAMIC_DISPATCH(MaxImpl)(x, n);
}
void sum_rows(const float* x, float* y, int64_t rows, int64_t cols) noexcept {
  HWY_DYNAMIC_DISPATCH(SumRowsImpl)(x, y, rows, cols);
}
void sum_cols(const float* x, float* y, int64_t rows, int64_t cols) noexcept {
  HWY_DYNAMIC_DISPATCH(SumColsImpl)(x, y, rows, cols);
}
int64_t find_not_below(const float* x, int64_t n, float t) noexcept {
  return HWY_DYNAMIC_DISPATCH(FindNotBelowImpl)(x, n, t);
}
int64_t find_above(const float* x, int64_t n, float t) noexcept {
  return HWY_DYNAMIC_DISPATCH(FindAboveImpl)(x, n, t);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
