// Recurrent cells with fused pointwise kernels (see kernels/recurrent.h for the
// equations; PyTorch's nn.GRU / nn.LSTM gate order), and the row-masked blend that keeps
// the state of padded sequences unchanged. The GEMMs stay outside: gx = x W_ihᵀ + b_ih
// (all time steps in one product) and gh = h W_hhᵀ + b_hh come in as tensors.
#pragma once

#include "qkv/ops/elementwise.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct GruCellResult {
  Tensor h;      // [B, H] the new state
  Tensor gates;  // [B, 3H] = (r, z, n), saved for backward
};

// gx, gh [B, 3H], h [B, H] (same dtype; 3H divisible by 3 and matching h) -> h' [B, H].
// ShapeError names the shapes; B = 0 gives empty results.
GruCellResult gru_cell(const TensorView& gx, const TensorView& gh, const TensorView& h);

struct GruCellGrads {
  Tensor dgx;  // [B, 3H]
  Tensor dgh;  // [B, 3H] (equals dgx except in the n block, scaled by r there)
  Tensor dh;   // [B, H]
};

// dh_new [B, H]; gh, h as passed to gru_cell; gates from GruCellResult.
GruCellGrads gru_cell_backward(const TensorView& dh_new, const TensorView& gh, const TensorView& h,
                               const TensorView& gates);

struct LstmCellResult {
  Tensor h;      // [B, H]
  Tensor c;      // [B, H]
  Tensor gates;  // [B, 4H] = (i, f, g, o) activated, saved for backward
};

// gx, gh [B, 4H], c [B, H] -> h', c' [B, H].
LstmCellResult lstm_cell(const TensorView& gx, const TensorView& gh, const TensorView& c);

struct LstmCellGrads {
  Tensor dgates;  // [B, 4H]: the gradient of gx and of gh alike (a = gx + gh)
  Tensor dc;      // [B, H]
};

// dh_new, dc_new [B, H] (dc_new: the gradient reaching c' from later steps; zeros when
// none); c, c_new and gates as in lstm_cell.
LstmCellGrads lstm_cell_backward(const TensorView& dh_new, const TensorView& dc_new,
                                 const TensorView& c, const TensorView& c_new,
                                 const TensorView& gates);

// a, b [..., C] (equal shapes and dtypes), mask [...] (a's shape without the last dim,
// any float dtype, values exactly 0 or 1, else ValueError naming the value and row)
//   -> y[r, :] = mask[r] ? a[r, :] : b[r, :].
// Freezes the state of a sequence past its length: h = masked_blend(h_cell, h, t < len).
Tensor masked_blend(const TensorView& a, const TensorView& b, const TensorView& mask);
// y = masked_blend(a, b, mask):  da = mask ⊙ dy,  db = (1 − mask) ⊙ dy (rows).
BinaryGrads masked_blend_backward(const TensorView& dy, const TensorView& mask);

}  // namespace qkv::ops
