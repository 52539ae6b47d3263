// The pointwise parts of the recurrent cells, fused: one pass over the gates per step
// instead of ~10 elementwise ops and their temporaries. The GEMMs (x Wᵀ for all time
// steps at once, h Uᵀ per step) stay in gemm; these kernels take their results.
//
// GRU (Cho et al. 2014) as PyTorch's nn.GRU, gate blocks in the order (r, z, n):
//   r = σ(gx_r + gh_r),  z = σ(gx_z + gh_z),  n = tanh(gx_n + r ⊙ gh_n),
//   h' = (1 − z) ⊙ n + z ⊙ h   (computed as n + z ⊙ (h − n)),
// with gx = x W_ihᵀ + b_ih and gh = h W_hhᵀ + b_hh, so b_hn sits inside r ⊙ (·).
// LSTM (Hochreiter & Schmidhuber 1997; forget gate: Gers et al. 2000) as nn.LSTM, order
// (i, f, g, o), a = gx + gh:
//   i = σ(a_i), f = σ(a_f), g = tanh(a_g), o = σ(a_o),  c' = f ⊙ c + i ⊙ g,
//   h' = o ⊙ tanh(c').
// Backward formulas: reference/recurrent.h. Rows are independent, so the row-parallel
// split never changes a result.
#pragma once

#include <cstdint>

#include "qkv/kernels/reference/recurrent.h"

namespace qkv::kernels {

// gx, gh [B, 3H], h [B, H] -> h_new [B, H], gates [B, 3H] = (r, z, n) saved for backward.
void gru_cell_forward(const float* gx, const float* gh, const float* h, float* h_new, float* gates,
                      const CellSize& size) noexcept;
// dh_new [B, H] -> grads (overwritten); see GruCellSaved / GruCellGrads for shapes.
void gru_cell_backward(const float* dh_new, const GruCellSaved<float>& saved,
                       const GruCellGrads<float>& grads, const CellSize& size) noexcept;

// gx, gh [B, 4H], c [B, H] -> out.h_new, out.c_new [B, H], out.gates [B, 4H] (activated).
void lstm_cell_forward(const float* gx, const float* gh, const float* c,
                       const LstmCellOutputs<float>& out, const CellSize& size) noexcept;
// dh_new, dc_new [B, H] -> grads (overwritten); see LstmCellSaved / LstmCellGrads.
void lstm_cell_backward(const float* dh_new, const float* dc_new, const LstmCellSaved<float>& saved,
                        const LstmCellGrads<float>& grads, const CellSize& size) noexcept;

// y[r, :] = mask[r] != 0 ? a[r, :] : b[r, :]. a, b, y (rows, cols), mask (rows) holding 0
// or 1 (checked by ops). A copy per row: memmove already runs at memory speed, so there
// is no Highway path. y may alias a or b.
void masked_blend_forward(const float* a, const float* b, const float* mask, float* y, int64_t rows,
                          int64_t cols) noexcept;
// da[r, :] = mask[r] ? dy[r, :] : 0,  db[r, :] = mask[r] ? 0 : dy[r, :]. dy, da, db
// (rows, cols); da and db must not alias dy.
void masked_blend_backward(const float* dy, const float* mask, float* da, float* db, int64_t rows,
                           int64_t cols) noexcept;

}  // namespace qkv::kernels
