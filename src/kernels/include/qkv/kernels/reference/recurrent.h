// Scalar reference twins of kernels/recurrent.h: the pointwise parts of the GRU and LSTM
// cells and the row mask that freezes finished (padded) sequences. Plain loops in the
// element type (float for kernel tests, double for gradient checks).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace qkv::kernels {

// One cell step: `batch` rows of `hidden` units. Gate tensors hold G·hidden values per
// row, one block of `hidden` per gate: GRU G = 3 (r, z, n), LSTM G = 4 (i, f, g, o).
struct CellSize {
  int64_t batch = 0;
  int64_t hidden = 0;
};

// What GRU backward reads: gh [B, 3H] (its n block is inside r ⊙ (·)), h [B, H] (the
// previous state) and gates [B, 3H] = (r, z, n) as saved by forward.
template <class T>
struct GruCellSaved {
  const T* gh;
  const T* h;
  const T* gates;
};
// GRU backward outputs, overwritten: dgx, dgh [B, 3H], dh [B, H].
template <class T>
struct GruCellGrads {
  T* dgx;
  T* dgh;
  T* dh;
};

// LSTM forward outputs: h_new, c_new [B, H], gates [B, 4H] = (i, f, g, o) activated.
template <class T>
struct LstmCellOutputs {
  T* h_new;
  T* c_new;
  T* gates;
};
// What LSTM backward reads: c, c_new [B, H] and the activated gates [B, 4H].
template <class T>
struct LstmCellSaved {
  const T* c;
  const T* c_new;
  const T* gates;
};
// LSTM backward outputs, overwritten: dgates [B, 4H] (the gradient of gx and of gh alike,
// since a = gx + gh) and dc [B, H].
template <class T>
struct LstmCellGrads {
  T* dgates;
  T* dc;
};

namespace ref {

template <class T>
T sigmoid(T x) noexcept {
  return T(1) / (T(1) + std::exp(-x));
}

template <class T>
void gru_cell_forward(const T* gx, const T* gh, const T* h, T* h_new, T* gates,
                      const CellSize& size) noexcept {
  const int64_t H = size.hidden;
  for (int64_t b = 0; b < size.batch; ++b) {
    const T* x = gx + b * 3 * H;
    const T* u = gh + b * 3 * H;
    T* saved = gates + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = sigmoid(x[j] + u[j]);
      const T z = sigmoid(x[H + j] + u[H + j]);
      const T n = std::tanh(x[2 * H + j] + r * u[2 * H + j]);
      const T hp = h[b * H + j];
      h_new[b * H + j] = n + z * (hp - n);  // (1 − z)·n + z·h
      saved[j] = r;
      saved[H + j] = z;
      saved[2 * H + j] = n;
    }
  }
}

// dh_new [B, H]. With a_r, a_z, a_n the pre-activations:
//   dh = dh'·z,  dz = dh'·(h − n),  dn = dh'·(1 − z),
//   da_n = dn·(1 − n²),  da_z = dz·z(1 − z),  da_r = da_n·gh_n·r(1 − r),
//   dgx = (da_r, da_z, da_n),  dgh = (da_r, da_z, da_n·r).
template <class T>
void gru_cell_backward(const T* dh_new, const GruCellSaved<T>& saved, const GruCellGrads<T>& grads,
                       const CellSize& size) noexcept {
  const int64_t H = size.hidden;
  for (int64_t b = 0; b < size.batch; ++b) {
    const T* g = saved.gates + b * 3 * H;
    const T* u = saved.gh + b * 3 * H;
    T* dx = grads.dgx + b * 3 * H;
    T* du = grads.dgh + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T r = g[j], z = g[H + j], n = g[2 * H + j];
      const T dy = dh_new[b * H + j], hp = saved.h[b * H + j];
      const T da_n = dy * (T(1) - z) * (T(1) - n * n);
      const T da_z = dy * (hp - n) * z * (T(1) - z);
      const T da_r = da_n * u[2 * H + j] * r * (T(1) - r);
      grads.dh[b * H + j] = dy * z;
      dx[j] = du[j] = da_r;
      dx[H + j] = du[H + j] = da_z;
      dx[2 * H + j] = da_n;
      du[2 * H + j] = da_n * r;
    }
  }
}

template <class T>
void lstm_cell_forward(const T* gx, const T* gh, const T* c, const LstmCellOutputs<T>& out,
                       const CellSize& size) noexcept {
  const int64_t H = size.hidden;
  for (int64_t b = 0; b < size.batch; ++b) {
    const T* x = gx + b * 4 * H;
    const T* u = gh + b * 4 * H;
    T* saved = out.gates + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T i = sigmoid(x[j] + u[j]);
      const T f = sigmoid(x[H + j] + u[H + j]);
      const T g = std::tanh(x[2 * H + j] + u[2 * H + j]);
      const T o = sigmoid(x[3 * H + j] + u[3 * H + j]);
      const T cn = f * c[b * H + j] + i * g;
      out.c_new[b * H + j] = cn;
      out.h_new[b * H + j] = o * std::tanh(cn);
      saved[j] = i;
      saved[H + j] = f;
      saved[2 * H + j] = g;
      saved[3 * H + j] = o;
    }
  }
}

// dh_new, dc_new [B, H] (dc_new: the gradient reaching c' from later steps). With
// t = tanh(c'):  dc' += dh'·o·(1 − t²),  dc = dc'·f,
//   da_i = dc'·g·i(1 − i),  da_f = dc'·c·f(1 − f),  da_g = dc'·i·(1 − g²),
//   da_o = dh'·t·o(1 − o).
template <class T>
void lstm_cell_backward(const T* dh_new, const T* dc_new, const LstmCellSaved<T>& saved,
                        const LstmCellGrads<T>& grads, const CellSize& size) noexcept {
  const int64_t H = size.hidden;
  for (int64_t b = 0; b < size.batch; ++b) {
    const T* a = saved.gates + b * 4 * H;
    T* da = grads.dgates + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t k = b * H + j;
      const T i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
      const T t = std::tanh(saved.c_new[k]);
      const T dc = dc_new[k] + dh_new[k] * o * (T(1) - t * t);
      da[j] = dc * g * i * (T(1) - i);
      da[H + j] = dc * saved.c[k] * f * (T(1) - f);
      da[2 * H + j] = dc * i * (T(1) - g * g);
      da[3 * H + j] = dh_new[k] * t * o * (T(1) - o);
      grads.dc[k] = dc * f;
    }
  }
}

// y[r, :] = mask[r] != 0 ? a[r, :] : b[r, :]  (a row select: exact, NaN in the unselected
// row does not leak). a, b, y (rows, cols); mask (rows).
template <class T>
void masked_blend_forward(const T* a, const T* b, const T* mask, T* y, int64_t rows,
                          int64_t cols) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const T* src = mask[r] != T(0) ? a : b;
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = src[r * cols + c];
  }
}

// da[r, :] = mask[r] ? dy[r, :] : 0,  db[r, :] = mask[r] ? 0 : dy[r, :].
template <class T>
void masked_blend_backward(const T* dy, const T* mask, T* da, T* db, int64_t rows,
                           int64_t cols) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const bool keep = mask[r] != T(0);
    for (int64_t c = 0; c < cols; ++c) {
      const T g = dy[r * cols + c];
      da[r * cols + c] = keep ? g : T(0);
      db[r * cols + c] = keep ? T(0) : g;
    }
  }
}

}  // namespace ref
}  // namespace qkv::kernels
