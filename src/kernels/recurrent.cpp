// Fused GRU / LSTM cell pointwise kernels (see qkv/kernels/recurrent.h), Highway dynamic
// dispatch, and the row-masked blend. Every element j of a row reads gate j of each
// block (j, H + j, 2H + j, ...), so a span of lanes loads G contiguous vectors.
#include "qkv/kernels/recurrent.h"

#include <cstdint>
#include <cstring>

#include "kernels/detail/parallel_rows.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/recurrent.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Order matters: the Highway headers below come after foreach_target.h.

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "kernels/detail/for_spans-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qkv::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements per parallel chunk (64 KiB of floats per stream), as the other row kernels:
// a cell step is memory-bound and small batches should stay on one thread.
constexpr int64_t kGrain = int64_t{1} << 14;

// σ(z) from e = e^−|z| ∈ (0, 1], so nothing overflows: z >= 0: 1/(1 + e), else
// e/(1 + e) (no cancellation in either branch).
template <class D, class V>
HWY_INLINE V CellSigmoid(D d, V z) {
  const V e = hn::Exp(d, hn::Neg(hn::Abs(z)));
  const V inv = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  return hn::IfThenElse(hn::Ge(z, hn::Zero(d)), inv, hn::Mul(e, inv));
}

void GruForwardImpl(const float* gx, const float* gh, const float* h, float* h_new, float* gates,
                    const CellSize& size) {
  const int64_t H = size.hidden;
  if (H <= 0) return;
  detail::parallel_rows(size.batch, 3 * H, kGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* x = gx + b * 3 * H;
      const float* u = gh + b * 3 * H;
      const float* hp = h + b * H;
      float* hn_out = h_new + b * H;
      float* saved = gates + b * 3 * H;
      ForSpans(H, [&](auto d, int64_t j) {
        const auto r = CellSigmoid(d, hn::Add(hn::LoadU(d, x + j), hn::LoadU(d, u + j)));
        const auto z = CellSigmoid(d, hn::Add(hn::LoadU(d, x + H + j), hn::LoadU(d, u + H + j)));
        const auto n =
            hn::Tanh(d, hn::MulAdd(r, hn::LoadU(d, u + 2 * H + j), hn::LoadU(d, x + 2 * H + j)));
        // h' = n + z·(h − n): one FMA, and exactly h where z rounds to 1.
        hn::StoreU(hn::MulAdd(z, hn::Sub(hn::LoadU(d, hp + j), n), n), d, hn_out + j);
        hn::StoreU(r, d, saved + j);
        hn::StoreU(z, d, saved + H + j);
        hn::StoreU(n, d, saved + 2 * H + j);
      });
    }
  });
}

void GruBackwardImpl(const float* dh_new, const GruCellSaved<float>& saved,
                     const GruCellGrads<float>& grads, const CellSize& size) {
  const int64_t H = size.hidden;
  if (H <= 0) return;
  detail::parallel_rows(size.batch, 3 * H, kGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* g = saved.gates + b * 3 * H;
      const float* u = saved.gh + b * 3 * H;
      const float* hp = saved.h + b * H;
      const float* dy = dh_new + b * H;
      float* dx = grads.dgx + b * 3 * H;
      float* du = grads.dgh + b * 3 * H;
      float* dh = grads.dh + b * H;
      ForSpans(H, [&](auto d, int64_t j) {
        const auto one = hn::Set(d, 1.0f);
        const auto r = hn::LoadU(d, g + j), z = hn::LoadU(d, g + H + j);
        const auto n = hn::LoadU(d, g + 2 * H + j), vdy = hn::LoadU(d, dy + j);
        const auto da_n = hn::Mul(hn::Mul(vdy, hn::Sub(one, z)), hn::NegMulAdd(n, n, one));
        const auto da_z =
            hn::Mul(hn::Mul(vdy, hn::Sub(hn::LoadU(d, hp + j), n)), hn::Mul(z, hn::Sub(one, z)));
        const auto da_r =
            hn::Mul(hn::Mul(da_n, hn::LoadU(d, u + 2 * H + j)), hn::Mul(r, hn::Sub(one, r)));
        hn::StoreU(hn::Mul(vdy, z), d, dh + j);
        hn::StoreU(da_r, d, dx + j);
        hn::StoreU(da_r, d, du + j);
        hn::StoreU(da_z, d, dx + H + j);
        hn::StoreU(da_z, d, du + H + j);
        hn::StoreU(da_n, d, dx + 2 * H + j);
        hn::StoreU(hn::Mul(da_n, r), d, du + 2 * H + j);
      });
    }
  });
}

void LstmForwardImpl(const float* gx, const float* gh, const float* c,
                     const LstmCellOutputs<float>& out, const CellSize& size) {
  const int64_t H = size.hidden;
  if (H <= 0) return;
  detail::parallel_rows(size.batch, 4 * H, kGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* x = gx + b * 4 * H;
      const float* u = gh + b * 4 * H;
      float* saved = out.gates + b * 4 * H;
      const int64_t row = b * H;
      ForSpans(H, [&](auto d, int64_t j) {
        auto pre = [&](int64_t k) {
          return hn::Add(hn::LoadU(d, x + k * H + j), hn::LoadU(d, u + k * H + j));
        };
        const auto i = CellSigmoid(d, pre(0)), f = CellSigmoid(d, pre(1));
        const auto g = hn::Tanh(d, pre(2));
        const auto o = CellSigmoid(d, pre(3));
        const auto cn = hn::MulAdd(f, hn::LoadU(d, c + row + j), hn::Mul(i, g));
        hn::StoreU(cn, d, out.c_new + row + j);
        hn::StoreU(hn::Mul(o, hn::Tanh(d, cn)), d, out.h_new + row + j);
        hn::StoreU(i, d, saved + j);
        hn::StoreU(f, d, saved + H + j);
        hn::StoreU(g, d, saved + 2 * H + j);
        hn::StoreU(o, d, saved + 3 * H + j);
      });
    }
  });
}

void LstmBackwardImpl(const float* dh_new, const float* dc_new, const LstmCellSaved<float>& saved,
                      const LstmCellGrads<float>& grads, const CellSize& size) {
  const int64_t H = size.hidden;
  if (H <= 0) return;
  detail::parallel_rows(size.batch, 4 * H, kGrain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* a = saved.gates + b * 4 * H;
      float* da = grads.dgates + b * 4 * H;
      const int64_t row = b * H;
      ForSpans(H, [&](auto d, int64_t j) {
        const auto one = hn::Set(d, 1.0f);
        const auto i = hn::LoadU(d, a + j), f = hn::LoadU(d, a + H + j);
        const auto g = hn::LoadU(d, a + 2 * H + j), o = hn::LoadU(d, a + 3 * H + j);
        const auto dh = hn::LoadU(d, dh_new + row + j);
        const auto t = hn::Tanh(d, hn::LoadU(d, saved.c_new + row + j));
        // dc' + dh'·o·(1 − t²)
        const auto dc =
            hn::MulAdd(hn::Mul(dh, o), hn::NegMulAdd(t, t, one), hn::LoadU(d, dc_new + row + j));
        hn::StoreU(hn::Mul(hn::Mul(dc, g), hn::Mul(i, hn::Sub(one, i))), d, da + j);
        hn::StoreU(
            hn::Mul(hn::Mul(dc, hn::LoadU(d, saved.c + row + j)), hn::Mul(f, hn::Sub(one, f))), d,
            da + H + j);
        hn::StoreU(hn::Mul(hn::Mul(dc, i), hn::NegMulAdd(g, g, one)), d, da + 2 * H + j);
        hn::StoreU(hn::Mul(hn::Mul(dh, t), hn::Mul(o, hn::Sub(one, o))), d, da + 3 * H + j);
        hn::StoreU(hn::Mul(dc, f), d, grads.dc + row + j);
      });
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace qkv::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qkv::kernels {

HWY_EXPORT(GruForwardImpl);
HWY_EXPORT(GruBackwardImpl);
HWY_EXPORT(LstmForwardImpl);
HWY_EXPORT(LstmBackwardImpl);

void gru_cell_forward(const float* gx, const float* gh, const float* h, float* h_new, float* gates,
                      const CellSize& size) noexcept {
  HWY_DYNAMIC_DISPATCH(GruForwardImpl)(gx, gh, h, h_new, gates, size);
}
void gru_cell_backward(const float* dh_new, const GruCellSaved<float>& saved,
                       const GruCellGrads<float>& grads, const CellSize& size) noexcept {
  HWY_DYNAMIC_DISPATCH(GruBackwardImpl)(dh_new, saved, grads, size);
}
void lstm_cell_forward(const float* gx, const float* gh, const float* c,
                       const LstmCellOutputs<float>& out, const CellSize& size) noexcept {
  HWY_DYNAMIC_DISPATCH(LstmForwardImpl)(gx, gh, c, out, size);
}
void lstm_cell_backward(const float* dh_new, const float* dc_new, const LstmCellSaved<float>& saved,
                        const LstmCellGrads<float>& grads, const CellSize& size) noexcept {
  HWY_DYNAMIC_DISPATCH(LstmBackwardImpl)(dh_new, dc_new, saved, grads, size);
}

void masked_blend_forward(const float* a, const float* b, const float* mask, float* y, int64_t rows,
                          int64_t cols) noexcept {
  if (cols <= 0) return;
  const auto bytes = size_t(cols) * sizeof(float);
  detail::parallel_rows(rows, cols, int64_t{1} << 14, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = (mask[r] != 0.0f ? a : b) + r * cols;
      if (src != y + r * cols) std::memmove(y + r * cols, src, bytes);
    }
  });
}

void masked_blend_backward(const float* dy, const float* mask, float* da, float* db, int64_t rows,
                           int64_t cols) noexcept {
  if (cols <= 0) return;
  const auto bytes = size_t(cols) * sizeof(float);
  detail::parallel_rows(rows, cols, int64_t{1} << 14, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const bool keep = mask[r] != 0.0f;
      std::memcpy((keep ? da : db) + r * cols, dy + r * cols, bytes);
      std::memset((keep ? db : da) + r * cols, 0, bytes);  // all-zero bits are +0.0f
    }
  });
}

}  // namespace qkv::kernels
#endif  // HWY_ONCE
