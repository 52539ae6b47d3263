// Joining and splitting tensors along an axis: concatenation (the two directions of a
// bidirectional RNN, Luong's [context; state]), stacking per-step outputs into a
// sequence, and selecting one time step. They only move elements, in contiguous blocks,
// so there is nothing for a SIMD kernel to add; negative axes count from the end. And the
// rows of a padded batch packed without their padding (gather_rows / scatter_rows), so a
// Transformer's position-wise work runs on real positions only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// parts: at least one, same dtype and rank >= 1, equal dims except `axis`
//   -> [..., Σ d_i, ...]. ShapeError / ValueError name the first mismatching part.
Tensor concat(std::span<const TensorView> parts, int axis);
// y = concat(parts, axis) with parts' sizes along axis `sizes`:
//   dparts[i] = dy[..., o_i : o_i + sizes[i], ...] (views of dy).
std::vector<Tensor> concat_backward(const Tensor& dy, std::span<const int64_t> sizes, int axis);

// parts: at least one, equal shapes [...] and dtypes -> [..., n, ...] with the new axis of
// size n = parts.size() at `axis` (in [−rank − 1, rank]).
Tensor stack(std::span<const TensorView> parts, int axis);
// y = stack(parts, axis):  dparts[i] = select(dy, axis, i).
std::vector<Tensor> stack_backward(const Tensor& dy, int axis);

// x [..., D, ...] -> x[..., index, ...] with `axis` removed; index in [0, D) (else
// IndexError naming it). A view of x when that is contiguous, else a copy.
Tensor select(const Tensor& x, int axis, int64_t index);
// y = select(x, axis, index):  dx = zeros shaped x_shape with dy at [..., index, ...].
Tensor select_backward(const TensorView& dy, const Shape& x_shape, int axis, int64_t index);
// dst[..., index, ...] += src in place: select's backward without materialising the
// zeros, so T selected steps cost O(T) instead of O(T²). dst contiguous; src shaped like
// select(dst, axis, index), same dtype.
void accumulate_select_into(const Tensor& dst, int axis, int64_t index, const TensorView& src);

// Packing: x [R, ...] -> [N, ...], row i = x[rows[i]]. rows strictly increasing in [0, R)
// (IndexError naming the first that is not): the real positions of a padded batch seen
// as R = B·T rows. Each is the other's adjoint: d(gather)/dx = scatter_rows(dy, rows, R),
// d(scatter)/dx = gather_rows(dy, rows).
Tensor gather_rows(const TensorView& x, std::span<const int64_t> rows);
// Unpacking: x [N, ...] with N = rows.size() -> [row_count, ...], row rows[i] = x[i] and
// every other row zero; rows as gather_rows', each < row_count.
Tensor scatter_rows(const TensorView& x, std::span<const int64_t> rows, int64_t row_count);

}  // namespace qkv::ops
