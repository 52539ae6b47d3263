// Scalar reference twin of kernels/flash_attention.h: the naive per-row softmax,
// accumulated in double, templated on T (the float64 path of ops::flash_attention and
// the oracle the fused kernel is tested against). No allocation: each row's scores are
// recomputed per pass instead of stored.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qkv::kernels {

// Scaled-dot attention over bh = batch·heads independent heads:
//   S = scale · Q Kᵀ,  P = softmax_rows(S masked),  O = P V.
// Masks (both give every query row a visible PREFIX of the keys):
//   causal:       query i sees key j iff j <= i + (tk − tq) (bottom-right aligned, as
//                 PyTorch's is_causal for tq == tk and the KV-cache convention);
//   key_lengths:  (bh) or nullptr; key j visible iff j < key_lengths[h].
// A query row with no visible key has P = 0, O = 0, lse = -inf, and zero gradients.
struct FlashAttentionRows;
struct FlashAttentionSpec {
  int64_t bh = 0, tq = 0, tk = 0;
  int64_t dh = 0;  // head dim of q and k
  int64_t dv = 0;  // head dim of v and out
  double scale = 1.0;
  bool causal = false;
  const int64_t* key_lengths = nullptr;  // (bh) or nullptr
  // Elements from head h's keys (values) to head h+1's, each head's [tk, dh] ([tk, dv])
  // rows dense; 0: tk·dh (tk·dv), all heads back to back. A decoder's cache with spare
  // capacity along T is read in place this way (k [B, H, capacity, dh] sliced to tk).
  // Only k and v: q, out, lse and the gradients are always dense.
  int64_t k_head_stride = 0;
  int64_t v_head_stride = 0;
  // (bh) or nullptr: head h reads the keys and values of head kv_heads[h] (the heads of
  // k and v as laid out above; nullptr: head h). Forward and weights only: beam search's
  // rows share their sentence's cross-attention keys and values without copies of them.
  const int64_t* kv_heads = nullptr;
  // Packed rows (below), or nullptr: the dense layouts above.
  const FlashAttentionRows* rows = nullptr;
};

// Packed rows: the heads read where a training batch's projections leave them, with no
// copy into (and out of) [bh, t, d] heads. Head h is head h % heads of sequence
// b = h / heads; its query i is row query_starts[b] + i of q, dq, out and dout (columns
// (h % heads)·dh of q and dq, (h % heads)·dv of out and dout), its key j row
// key_starts[b] + j of k, dk, v and dv, likewise. Sequence b has query_counts[b] <= tq
// queries (the rows past them are neither read nor written; their lse is −inf) and
// key_counts[b] <= tk keys, all of them visible unless causal hides some. ld*: the
// elements from one row to the next (q and dq share ldq, k and dk ldk, v and dv ldv, out
// and dout ldo). Not with k_head_stride or kv_heads; lse (and probs) stay dense [bh, tq].
struct FlashAttentionRows {
  int64_t heads = 1;
  const int64_t* query_starts = nullptr;  // (bh / heads) each
  const int64_t* query_counts = nullptr;
  const int64_t* key_starts = nullptr;
  const int64_t* key_counts = nullptr;
  int64_t ldq = 0, ldk = 0, ldv = 0, ldo = 0;
};

// Row strides of the operands: q and dq, k and dk, v and dv, out and dout.
inline int64_t flash_ldq(const FlashAttentionSpec& s) noexcept {
  return s.rows ? s.rows->ldq : s.dh;
}
inline int64_t flash_ldk(const FlashAttentionSpec& s) noexcept {
  return s.rows ? s.rows->ldk : s.dh;
}
inline int64_t flash_ldv(const FlashAttentionSpec& s) noexcept {
  return s.rows ? s.rows->ldv : s.dv;
}
inline int64_t flash_ldo(const FlashAttentionSpec& s) noexcept {
  return s.rows ? s.rows->ldo : s.dv;
}
// The queries (keys) head h has: rows past them do not exist in packed rows.
inline int64_t flash_queries(const FlashAttentionSpec& s, int64_t h) noexcept {
  return s.rows ? s.rows->query_counts[h / s.rows->heads] : s.tq;
}
inline int64_t flash_keys(const FlashAttentionSpec& s, int64_t h) noexcept {
  return s.rows ? s.rows->key_counts[h / s.rows->heads] : s.tk;
}
// The operands by their layout: q and dq (Q), out and dout (O), k and dk (K), v and dv (V).
enum class FlashOperand { Q, O, K, V };

// Row i of head h of operand x (for K and V outside packed rows: of dk and dv, always dense
// [bh, tk, d], whatever k_head_stride says of k and v; flash_key_head reads those).
template <class T>
T* flash_row(const FlashAttentionSpec& s, T* x, FlashOperand op, int64_t h, int64_t i) noexcept {
  const bool query_side = op == FlashOperand::Q || op == FlashOperand::O;
  const int64_t d = op == FlashOperand::Q || op == FlashOperand::K ? s.dh : s.dv;
  if (!s.rows) return x + (h * (query_side ? s.tq : s.tk) + i) * d;
  const FlashAttentionRows& r = *s.rows;
  const int64_t ld = op == FlashOperand::Q   ? r.ldq
                     : op == FlashOperand::O ? r.ldo
                     : op == FlashOperand::K ? r.ldk
                                             : r.ldv;
  const int64_t* starts = query_side ? r.query_starts : r.key_starts;
  return x + (starts[h / r.heads] + i) * ld + h % r.heads * d;
}

// Head h's keys [tk, dh] and values [tk, dv] (rows flash_ldk / flash_ldv apart).
template <class T>
T* flash_key_head(const FlashAttentionSpec& s, T* k, int64_t h) noexcept {
  if (s.rows) return flash_row(s, k, FlashOperand::K, h, 0);
  const int64_t from = s.kv_heads != nullptr ? s.kv_heads[h] : h;
  return k + from * (s.k_head_stride != 0 ? s.k_head_stride : s.tk * s.dh);
}
template <class T>
T* flash_value_head(const FlashAttentionSpec& s, T* v, int64_t h) noexcept {
  if (s.rows) return flash_row(s, v, FlashOperand::V, h, 0);
  const int64_t from = s.kv_heads != nullptr ? s.kv_heads[h] : h;
  return v + from * (s.v_head_stride != 0 ? s.v_head_stride : s.tk * s.dv);
}

namespace ref {

// Number of visible keys of query row i of head h: keys [0, visible) are visible.
inline int64_t flash_visible(const FlashAttentionSpec& s, int64_t h, int64_t i) noexcept {
  int64_t n = flash_keys(s, h);
  if (s.key_lengths) n = std::min(n, s.key_lengths[h]);
  if (s.causal) n = std::min(n, i + (s.tk - s.tq) + 1);
  return n < 0 ? 0 : n;
}

template <class T>
double flash_score(const FlashAttentionSpec& s, const T* qi, const T* kj) noexcept {
  double acc = 0;
  for (int64_t c = 0; c < s.dh; ++c) acc += double(qi[c]) * double(kj[c]);
  return s.scale * acc;
}

// log Σ_j exp(s_ij) over the visible keys of row i (-inf when none).
template <class T>
double flash_row_lse(const FlashAttentionSpec& s, const T* qi, const T* kh, int64_t vis) noexcept {
  const int64_t ldk = flash_ldk(s);
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < vis; ++j) m = std::max(m, flash_score(s, qi, kh + j * ldk));
  if (vis == 0) return m;
  double z = 0;
  for (int64_t j = 0; j < vis; ++j) z += std::exp(flash_score(s, qi, kh + j * ldk) - m);
  return m + std::log(z);
}

// q [bh,tq,dh], k [bh,tk,dh], v [bh,tk,dv] -> out [bh,tq,dv], lse [bh,tq].
template <class T>
void flash_attention_forward(const FlashAttentionSpec& s, const T* q, const T* k, const T* v,
                             T* out, T* lse) noexcept {
  const int64_t ldk = flash_ldk(s), ldv = flash_ldv(s);
  for (int64_t h = 0; h < s.bh; ++h) {
    const T* kh = flash_key_head(s, k, h);    // [tk, dh]
    const T* vh = flash_value_head(s, v, h);  // [tk, dv]
    const int64_t nq = flash_queries(s, h);
    for (int64_t i = nq; i < s.tq; ++i) lse[h * s.tq + i] = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < nq; ++i) {
      const T* qi = flash_row(s, q, FlashOperand::Q, h, i);  // [dh]
      T* oi = flash_row(s, out, FlashOperand::O, h, i);      // [dv]
      const int64_t vis = flash_visible(s, h, i);
      const double l = flash_row_lse(s, qi, kh, vis);
      lse[h * s.tq + i] = T(l);
      for (int64_t c = 0; c < s.dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < vis; ++j)
          acc += std::exp(flash_score(s, qi, kh + j * ldk) - l) * double(vh[j * ldv + c]);
        oi[c] = T(acc);
      }
    }
  }
}

// Gradients of O = softmax(scale·QKᵀ) V given dout [bh,tq,dv]; dq [bh,tq,dh],
// dk [bh,tk,dh], dv [bh,tk,dv] are overwritten. Per row i, with P_ij = exp(s_ij − lse_i):
//   dV_j += P_ij dO_i,  dP_ij = dO_i·V_j,  δ_i = Σ_j P_ij dP_ij (= dO_i·O_i),
//   dS_ij = P_ij (dP_ij − δ_i),  dQ_i += scale Σ_j dS_ij K_j,  dK_j += scale dS_ij Q_i.
template <class T>
void flash_attention_backward(const FlashAttentionSpec& s, const T* q, const T* k, const T* v,
                              const T* dout, T* dq, T* dk, T* dv) noexcept {
  const int64_t ldk = flash_ldk(s), ldv = flash_ldv(s);
  for (int64_t h = 0; h < s.bh; ++h) {
    const int64_t nq = flash_queries(s, h), nk = flash_keys(s, h);
    for (int64_t i = 0; i < nq; ++i)
      std::fill_n(flash_row(s, dq, FlashOperand::Q, h, i), s.dh, T(0));
    for (int64_t j = 0; j < nk; ++j) {
      std::fill_n(flash_row(s, dk, FlashOperand::K, h, j), s.dh, T(0));
      std::fill_n(flash_row(s, dv, FlashOperand::V, h, j), s.dv, T(0));
    }
  }
  for (int64_t h = 0; h < s.bh; ++h) {
    const T* kh = flash_key_head(s, k, h);    // [tk, dh]
    const T* vh = flash_value_head(s, v, h);  // [tk, dv]
    for (int64_t i = 0; i < flash_queries(s, h); ++i) {
      const T* qi = flash_row(s, q, FlashOperand::Q, h, i);      // [dh]
      const T* doi = flash_row(s, dout, FlashOperand::O, h, i);  // [dv]
      T* dqi = flash_row(s, dq, FlashOperand::Q, h, i);          // [dh]
      const int64_t vis = flash_visible(s, h, i);
      const double l = flash_row_lse(s, qi, kh, vis);
      auto p_of = [&](int64_t j) { return std::exp(flash_score(s, qi, kh + j * ldk) - l); };
      auto dp_of = [&](int64_t j) {
        double acc = 0;
        for (int64_t c = 0; c < s.dv; ++c) acc += double(doi[c]) * double(vh[j * ldv + c]);
        return acc;
      };
      double delta = 0;
      for (int64_t j = 0; j < vis; ++j) delta += p_of(j) * dp_of(j);
      for (int64_t j = 0; j < vis; ++j) {
        const double p = p_of(j), ds = p * (dp_of(j) - delta);
        T* dvj = flash_row(s, dv, FlashOperand::V, h, j);
        T* dkj = flash_row(s, dk, FlashOperand::K, h, j);
        for (int64_t c = 0; c < s.dv; ++c) dvj[c] += T(p * double(doi[c]));
        for (int64_t c = 0; c < s.dh; ++c) {
          dqi[c] += T(s.scale * ds * double(kh[j * ldk + c]));
          dkj[c] += T(s.scale * ds * double(qi[c]));
        }
      }
    }
  }
}

// Attention weights P of query rows [row_begin, row_end) of every head, recomputed from
// lse [bh,tq]: p [bh, row_end − row_begin, tk], 0 where masked.
template <class T>
void flash_attention_weights(const FlashAttentionSpec& s, const T* q, const T* k, const T* lse,
                             int64_t row_begin, int64_t row_end, T* p) noexcept {
  const int64_t rows = row_end - row_begin;
  for (int64_t h = 0; h < s.bh; ++h)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = row_begin + r;
      const T* qi = q + (h * s.tq + i) * s.dh;  // [dh]
      T* pr = p + (h * rows + r) * s.tk;        // [tk]
      const int64_t vis = flash_visible(s, h, i);
      for (int64_t j = 0; j < s.tk; ++j)
        pr[j] = j < vis ? T(std::exp(flash_score(s, qi, flash_key_head(s, k, h) + j * s.dh) -
                                     double(lse[h * s.tq + i])))
                        : T(0);
    }
}

}  // namespace ref
}  // namespace qkv::kernels
