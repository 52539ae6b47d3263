// Inverted dropout with a counter-based (Philox4x32-10) mask, Highway dynamic dispatch.
//
// Element i is kept iff rng.uniform(offset + i) >= p, exactly as ref::dropout_forward.
// CounterRng::bits(j) is word j % 4 of the Philox block j / 4 with counter
// (block lo, block hi, stream lo, stream hi) and key (seed lo, seed hi) -- see
// base/rng.cpp. Calling uniform() per element would compute each block four times, so
// the vector path evaluates Philox itself, one block per 64-bit lane, and uses all four
// words. The tests compare against CounterRng::uniform, so a change to that mapping in
// rng.cpp cannot go unnoticed.
//
// uniform(j) = (bits >> 8)·2^-24, so uniform >= p  <=>  (bits >> 8) >= ceil(p·2^24),
// an exact integer test (p·2^24 is exact in double; both sides are integers < 2^25).
#include "qkv/kernels/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "qkv/base/rng.h"
#include "qkv/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/dropout.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU64 = hn::ScalableTag<uint64_t>;
using DU32 = hn::Repartition<uint32_t, DU64>;
using DI32 = hn::Repartition<int32_t, DU64>;
using DF = hn::Repartition<float, DU64>;
using VU64 = hn::Vec<DU64>;

// Constants of Philox4x32 (Salmon et al. 2011, and base/rng.cpp).
constexpr uint64_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
// Elements per parallel chunk. The mask is a pure function of the index, so chunking
// never changes the result; it only has to amortise the pool hand-off.
constexpr int64_t kGrain = int64_t{1} << 14;

#if HWY_TARGET != HWY_SCALAR
// Philox4x32-10 on one block per lane. Lanes hold 32-bit words zero-extended to 64 bits
// so MulEven yields the full 32×32 → 64-bit products the round needs.
HWY_INLINE void Philox10(VU64& c0, VU64& c1, VU64& c2, VU64& c3, uint64_t seed) {
  const DU64 d;
  const DU32 d32;
  const VU64 lo32 = hn::Set(d, 0xFFFFFFFFull);
  const VU64 m0 = hn::Set(d, kMul0), m1 = hn::Set(d, kMul1);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += kWeyl0, k1 += kWeyl1;
    const VU64 p0 = hn::MulEven(hn::BitCast(d32, c0), hn::BitCast(d32, m0));
    const VU64 p1 = hn::MulEven(hn::BitCast(d32, c2), hn::BitCast(d32, m1));
    const VU64 n0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1), hn::Set(d, k0));
    const VU64 n2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3), hn::Set(d, k1));
    c1 = hn::And(p1, lo32);
    c3 = hn::And(p0, lo32);
    c0 = n0;
    c2 = n2;
  }
}
#endif

// ORs `count` mask bits (bit l of `bits` for element e + l) into keep, which is zeroed:
// only the bytes holding elements [e, e + count) are touched, so threads whose element
// ranges start and end on multiples of 8 never share a byte.
HWY_INLINE void PutBits(uint8_t* keep, int64_t e, uint64_t bits, int count) {
  const int shift = int(e % 8);
  bits <<= shift;
  for (int64_t b = e / 8, last = (e + count - 1) / 8; b <= last; ++b, bits >>= 8)
    keep[b] = uint8_t(keep[b] | (bits & 0xFF));
}

#if HWY_TARGET == HWY_SCALAR
// One-lane target: no 64-bit lanes to split into 32-bit words; per-element reference.
template <bool kRecord>
void DropoutRange(const float* x, float* y, int64_t lo, int64_t hi, const DropoutSpec& spec,
                  uint8_t* keep_bits, const float* residual) {
  const auto scale = static_cast<float>(1.0 / (1.0 - spec.p));
  for (int64_t i = lo; i < hi; ++i) {
    const bool keep = double(spec.rng.uniform(spec.offset + uint64_t(i))) >= spec.p;
    const float dropped = keep ? x[i] * scale : 0.0f;
    y[i] = residual ? residual[i] + dropped : dropped;
    if constexpr (kRecord) PutBits(keep_bits, i, keep, 1);
  }
}
#else
// y[i] = keep(i) ? x[i]·scale : 0 for i in [lo, hi), plus residual[i] when residual is
// not null; kRecord: keep(i) also into keep_bits.
template <bool kRecord>
void DropoutRange(const float* x, float* y, int64_t lo, int64_t hi, const DropoutSpec& spec,
                  uint8_t* keep_bits, const float* residual) {
  const DU64 d64;
  const DU32 d32;
  const DI32 di;
  const DF df;
  const auto scale = static_cast<float>(1.0 / (1.0 - spec.p));
  const auto threshold = static_cast<int32_t>(std::ceil(spec.p * 0x1.0p24));
  auto scalar = [&](int64_t i) {
    const bool keep = double(spec.rng.uniform(spec.offset + uint64_t(i))) >= spec.p;
    const float dropped = keep ? x[i] * scale : 0.0f;
    y[i] = residual ? residual[i] + dropped : dropped;
    if constexpr (kRecord) PutBits(keep_bits, i, keep, 1);
  };
  int64_t i = lo;
  for (; i < hi && ((spec.offset + uint64_t(i)) & 3) != 0; ++i) scalar(i);  // to a block start

  constexpr size_t kN64 = hn::MaxLanes(DU64());
  const auto n64 = static_cast<int64_t>(hn::Lanes(d64));
  const int64_t per_iter = 4 * n64;  // elements: four words per block
  // Lane l computes block (l & 1)·n64/2 + l/2 of the iteration: after InterleaveLower/
  // Upper (which work within 128-bit halves) the words come out in element order.
  HWY_ALIGN uint64_t lane_block[kN64];
  for (int64_t l = 0; l < n64; ++l) lane_block[l] = uint64_t((l & 1) * (n64 / 2) + (l >> 1));
  const VU64 lane_offset = hn::Load(d64, lane_block);
  const VU64 lo32 = hn::Set(d64, 0xFFFFFFFFull);
  const VU64 s_lo = hn::Set(d64, spec.rng.stream() & 0xFFFFFFFFull);
  const VU64 s_hi = hn::Set(d64, spec.rng.stream() >> 32);
  const auto vthreshold_m1 = hn::Set(di, threshold - 1);  // keep: r24 > threshold − 1
  const auto vscale = hn::Set(df, scale);
  const auto n32 = static_cast<int64_t>(hn::Lanes(d32));
  for (; i + per_iter <= hi; i += per_iter) {
    const uint64_t block = (spec.offset + uint64_t(i)) >> 2;
    const VU64 ctr = hn::Add(hn::Set(d64, block), lane_offset);
    VU64 c0 = hn::And(ctr, lo32), c1 = hn::ShiftRight<32>(ctr), c2 = s_lo, c3 = s_hi;
    Philox10(c0, c1, c2, c3, spec.rng.seed());
    // Words (w0, w1) and (w2, w3) of each block packed into one 64-bit lane each.
    const VU64 w01 = hn::Or(c0, hn::ShiftLeft<32>(c1));
    const VU64 w23 = hn::Or(c2, hn::ShiftLeft<32>(c3));
    const hn::Vec<DU32> bits[2] = {hn::BitCast(d32, hn::InterleaveLower(d64, w01, w23)),
                                   hn::BitCast(d32, hn::InterleaveUpper(d64, w01, w23))};
    for (int half = 0; half < 2; ++half) {
      // (bits >> 8) < 2^24 fits in int32, so a signed compare is exact.
      const auto r24 = hn::BitCast(di, hn::ShiftRight<8>(bits[half]));
      const auto keep = hn::RebindMask(df, r24 > vthreshold_m1);
      const int64_t e = i + half * n32;
      auto out = hn::IfThenElseZero(keep, hn::Mul(hn::LoadU(df, x + e), vscale));
      if (residual) out = hn::Add(hn::LoadU(df, residual + e), out);
      hn::StoreU(out, df, y + e);
      if constexpr (kRecord) {
        if (n32 % 8 == 0 && e % 8 == 0) {  // whole bytes (training's offsets): stored as is
          hn::StoreMaskBits(df, keep, keep_bits + e / 8);
        } else {
          uint8_t packed[8] = {};
          hn::StoreMaskBits(df, keep, packed);
          uint64_t bits = 0;
          std::memcpy(&bits, packed, sizeof bits);
          PutBits(keep_bits, e, bits, int(n32));
        }
      }
    }
  }
  for (; i < hi; ++i) scalar(i);
}
#endif  // HWY_TARGET == HWY_SCALAR

// keep_bits: nullptr, or (zeroed) the mask bits to record. Chunks of kGrain elements (a
// multiple of 8) record into disjoint bytes. residual: nullptr, or added to every result.
void DropoutImpl(const float* x, float* y, int64_t n, const DropoutSpec& spec, uint8_t* keep_bits,
                 const float* residual) {
  auto range = [&](int64_t lo, int64_t hi) {
    if (keep_bits)
      DropoutRange<true>(x, y, lo, hi, spec, keep_bits, residual);
    else
      DropoutRange<false>(x, y, lo, hi, spec, nullptr, residual);
  };
  if (n <= kGrain) return range(0, n);
  parallel_for(0, n, kGrain, range);
}

// dx[i] = bit i of keep_bits ? dy[i]·scale : 0: the multiply forward's mask was applied
// with, so the bits of regenerating it.
void DropoutKeptImpl(const float* dy, float* dx, int64_t n, float scale, const uint8_t* keep_bits) {
  auto range = [&](int64_t lo, int64_t hi) {
    int64_t i = lo;
#if HWY_TARGET != HWY_SCALAR
    const hn::ScalableTag<float> df;
    const auto vscale = hn::Set(df, scale);
    const auto lanes = static_cast<int64_t>(hn::Lanes(df));
    // lo is a multiple of 8 (kGrain) and so is each step (8 or 16 lanes): whole bytes.
    if (lanes % 8 == 0)
      for (; i + lanes <= hi; i += lanes) {
        const auto keep = hn::LoadMaskBits(df, keep_bits + i / 8);
        hn::StoreU(hn::IfThenElseZero(keep, hn::Mul(hn::LoadU(df, dy + i), vscale)), df, dx + i);
      }
#endif
    for (; i < hi; ++i) dx[i] = (keep_bits[i / 8] >> (i % 8)) & 1 ? dy[i] * scale : 0.0f;
  };
  if (n <= kGrain) return range(0, n);
  parallel_for(0, n, kGrain, range);
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(DropoutImpl);
HWY_EXPORT(DropoutKeptImpl);

void dropout_forward(const float* x, float* y, int64_t n, const DropoutSpec& spec) noexcept {
  if (n <= 0) return;
  HWY_DYNAMIC_DISPATCH(DropoutImpl)(x, y, n, spec, nullptr, nullptr);
}

void dropout_forward_keep(const float* x, float* y, int64_t n, const DropoutSpec& spec,
                          uint8_t* keep) noexcept {
  if (n <= 0) return;
  std::fill(keep, keep + ref::dropout_keep_bytes(n), uint8_t{0});
  HWY_DYNAMIC_DISPATCH(DropoutImpl)(x, y, n, spec, keep, nullptr);
}

void dropout_add_forward_keep(const float* residual, const float* x, float* y, int64_t n,
                              const DropoutSpec& spec, uint8_t* keep) noexcept {
  if (n <= 0) return;
  std::fill(keep, keep + ref::dropout_keep_bytes(n), uint8_t{0});
  HWY_DYNAMIC_DISPATCH(DropoutImpl)(x, y, n, spec, keep, residual);
}

void dropout_backward_keep(const float* dy, float* dx, int64_t n, double p,
                           const uint8_t* keep) noexcept {
  if (n <= 0) return;
  HWY_DYNAMIC_DISPATCH(DropoutKeptImpl)(dy, dx, n, static_cast<float>(1.0 / (1.0 - p)), keep);
}

void dropout_backward(const float* dy, float* dx, int64_t n, const DropoutSpec& spec) noexcept {
  // d(x·m·s)/dx = m·s: the same mask and scale applied to dy.
  if (n <= 0) return;
  HWY_DYNAMIC_DISPATCH(DropoutImpl)(dy, dx, n, spec, nullptr, nullptr);
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
