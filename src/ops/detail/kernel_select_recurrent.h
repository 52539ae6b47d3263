// kernel_select.h's counterpart for the recurrent kernels: float calls the fast kernel,
// double its reference twin (kept apart so the recurrent ops add no lines to the shared
// table).
#pragma once

#include "qkv/kernels/recurrent.h"

namespace qkv::ops::kern {

using kernels::CellSize;

inline void gru_cell_forward(const float* gx, const float* gh, const float* h, float* h_new,
                             float* gates, const CellSize& s) {
  kernels::gru_cell_forward(gx, gh, h, h_new, gates, s);
}
inline void gru_cell_forward(const double* gx, const double* gh, const double* h, double* h_new,
                             double* gates, const CellSize& s) {
  kernels::ref::gru_cell_forward(gx, gh, h, h_new, gates, s);
}
inline void gru_cell_backward(const float* dh, const kernels::GruCellSaved<float>& saved,
                              const kernels::GruCellGrads<float>& grads, const CellSize& s) {
  kernels::gru_cell_backward(dh, saved, grads, s);
}
inline void gru_cell_backward(const double* dh, const kernels::GruCellSaved<double>& saved,
                              const kernels::GruCellGrads<double>& grads, const CellSize& s) {
  kernels::ref::gru_cell_backward(dh, saved, grads, s);
}
inline void lstm_cell_forward(const float* gx, const float* gh, const float* c,
                              const kernels::LstmCellOutputs<float>& out, const CellSize& s) {
  kernels::lstm_cell_forward(gx, gh, c, out, s);
}
inline void lstm_cell_forward(const double* gx, const double* gh, const double* c,
                              const kernels::LstmCellOutputs<double>& out, const CellSize& s) {
  kernels::ref::lstm_cell_forward(gx, gh, c, out, s);
}
inline void lstm_cell_backward(const float* dh, const float* dc,
                               const kernels::LstmCellSaved<float>& saved,
                               const kernels::LstmCellGrads<float>& grads, const CellSize& s) {
  kernels::lstm_cell_backward(dh, dc, saved, grads, s);
}
inline void lstm_cell_backward(const double* dh, const double* dc,
                               const kernels::LstmCellSaved<double>& saved,
                               const kernels::LstmCellGrads<double>& grads, const CellSize& s) {
  kernels::ref::lstm_cell_backward(dh, dc, saved, grads, s);
}
inline void masked_blend_forward(const float* a, const float* b, const float* m, float* y,
                                 int64_t rows, int64_t cols) {
  kernels::masked_blend_forward(a, b, m, y, rows, cols);
}
inline void masked_blend_forward(const double* a, const double* b, const double* m, double* y,
                                 int64_t rows, int64_t cols) {
  kernels::ref::masked_blend_forward(a, b, m, y, rows, cols);
}
inline void masked_blend_backward(const float* dy, const float* m, float* da, float* db,
                                  int64_t rows, int64_t cols) {
  kernels::masked_blend_backward(dy, m, da, db, rows, cols);
}
inline void masked_blend_backward(const double* dy, const double* m, double* da, double* db,
                                  int64_t rows, int64_t cols) {
  kernels::ref::masked_blend_backward(dy, m, da, db, rows, cols);
}

}  // namespace qkv::ops::kern
