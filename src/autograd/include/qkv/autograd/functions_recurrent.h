// Differentiable recurrent cells, the row-masked blend and the sequence ops (concat,
// stack, select): each mirrors its op in qkv/ops/recurrent.h or qkv/ops/sequence.h (same
// arguments, shapes and errors) and records its backward on the tape. Registry names are
// the C++ names; lstm_cell's two outputs are selected from one recorded [2, B, H] value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/autograd/variable.h"

namespace qkv::autograd {

// ---- recurrent cells (functions_recurrent.cpp) ----

// gx, gh [B, 3H], h [B, H] -> h' [B, H] (GRU, gate order r, z, n; see kernels/recurrent.h).
Variable gru_cell(const Variable& gx, const Variable& gh, const Variable& h);

struct LstmCellOutput {
  Variable h;  // [B, H]
  Variable c;  // [B, H]
};
// gx, gh [B, 4H], c [B, H] -> h', c' [B, H] (LSTM, gate order i, f, g, o).
LstmCellOutput lstm_cell(const Variable& gx, const Variable& gh, const Variable& c);

// a, b [..., C], mask [...] of 0/1 (a constant: no gradient, not modified until backward)
//   -> y[r, :] = mask[r] ? a[r, :] : b[r, :].
Variable masked_blend(const Variable& a, const Variable& b, const Tensor& mask);

// ---- joining and splitting (functions_sequence.cpp) ----

// parts [..., d_i, ...] (equal dims except `axis`) -> [..., Σ d_i, ...].
Variable concat(const std::vector<Variable>& parts, int axis);
// parts [...] (equal shapes) -> [..., n, ...] with the new axis at `axis`.
Variable stack(const std::vector<Variable>& parts, int axis);
// x [..., D, ...] -> x[..., index, ...] with `axis` removed. Backward adds into the
// selected slice of x's gradient in place, so selecting every step of a sequence costs
// O(T), not O(T²).
Variable select(const Variable& x, int axis, int64_t index);
// Packing a padded batch's real rows and back (ops::gather_rows / ops::scatter_rows; rows
// strictly increasing): x [R, ...] -> [N, ...] and x [N, ...] -> [row_count, ...], each
// the other's backward. The rows are copied: the caller's span may go away.
Variable gather_rows(const Variable& x, std::span<const int64_t> rows);
Variable scatter_rows(const Variable& x, std::span<const int64_t> rows, int64_t row_count);

}  // namespace qkv::autograd
