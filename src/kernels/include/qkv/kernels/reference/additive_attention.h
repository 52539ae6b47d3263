// Scalar reference twin of kernels/additive_attention.h: the additive (Bahdanau) score
// and its gradients by plain loops accumulated in double, templated on T (the float64
// path of ops::additive_scores and the oracle the SIMD kernel is tested against).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace qkv::kernels {

// Additive scores of `batch` independent (query set, key set) pairs:
//   s[b, i, j] = Σ_a v[a] · tanh(qp[b, i, a] + kp[b, j, a]),
// where qp = W q + bias and kp = U k are the projected queries and keys (projections
// are GEMMs done by the caller). The [batch, tq, tk, hidden] tanh activations exist
// only one (i, j) pair at a time.
struct AdditiveScoreSpec {
  int64_t batch = 0, tq = 0, tk = 0;
  int64_t hidden = 0;  // A
};

template <class T>
struct AdditiveScoreGrads {
  T* dqp;      // [batch, tq, hidden]
  T* dkp;      // [batch, tk, hidden]
  T* dv;       // [hidden]
  T* dv_rows;  // caller scratch [batch·tq, hidden] (per-query partial sums of dv)
  // dkp += the keys' gradient instead of dkp = it: a decoder attends to the same keys at
  // every step, and adding here saves a temporary and a pass over [batch, tk, hidden]
  // per step. Each element becomes dkp + (its fresh gradient), as an add after the fact.
  bool add_dkp = false;
};

namespace ref {

// qp [batch,tq,A], kp [batch,tk,A], v [A] -> s [batch,tq,tk] (overwritten).
template <class T>
void additive_scores_forward(const AdditiveScoreSpec& s, const T* qp, const T* kp, const T* v,
                             T* scores) noexcept {
  const int64_t a_n = s.hidden;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.tq; ++i)
      for (int64_t j = 0; j < s.tk; ++j) {
        const T* qr = qp + (b * s.tq + i) * a_n;
        const T* kr = kp + (b * s.tk + j) * a_n;
        double acc = 0;
        for (int64_t a = 0; a < a_n; ++a) acc += double(v[a]) * std::tanh(double(qr[a] + kr[a]));
        scores[(b * s.tq + i) * s.tk + j] = T(acc);
      }
}

// dscores [batch,tq,tk] -> dqp, dkp, dv (overwritten; dkp added to with g.add_dkp). With
// t = tanh(qp_i + kp_j):
//   dqp_i = v ⊙ Σ_j ds_ij (1 − t²),  dkp_j = v ⊙ Σ_i ds_ij (1 − t²),  dv = Σ_ij ds_ij t.
template <class T>
void additive_scores_backward(const AdditiveScoreSpec& s, const T* qp, const T* kp, const T* v,
                              const T* dscores, AdditiveScoreGrads<T> g) {
  if (g.add_dkp) {
    // The fresh gradient first, then one addition per element (the contract above).
    std::vector<T> fresh(size_t(std::max<int64_t>(s.batch * s.tk * s.hidden, 0)));
    AdditiveScoreGrads<T> once = g;
    once.dkp = fresh.data();
    once.add_dkp = false;
    additive_scores_backward(s, qp, kp, v, dscores, once);
    for (size_t n = 0; n < fresh.size(); ++n) g.dkp[n] = T(g.dkp[n] + fresh[n]);
    return;
  }
  const int64_t a_n = s.hidden;
  for (int64_t a = 0; a < a_n; ++a) g.dv[a] = T(0);
  for (int64_t n = 0; n < s.batch * s.tq * a_n; ++n) g.dqp[n] = T(0);
  for (int64_t n = 0; n < s.batch * s.tk * a_n; ++n) g.dkp[n] = T(0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.tq; ++i)
      for (int64_t j = 0; j < s.tk; ++j) {
        const double ds = double(dscores[(b * s.tq + i) * s.tk + j]);
        if (ds == 0) continue;
        const T* qr = qp + (b * s.tq + i) * a_n;
        const T* kr = kp + (b * s.tk + j) * a_n;
        T* dqr = g.dqp + (b * s.tq + i) * a_n;
        T* dkr = g.dkp + (b * s.tk + j) * a_n;
        for (int64_t a = 0; a < a_n; ++a) {
          const double t = std::tanh(double(qr[a] + kr[a]));
          const double h = ds * (1 - t * t) * double(v[a]);
          dqr[a] = T(double(dqr[a]) + h);
          dkr[a] = T(double(dkr[a]) + h);
          g.dv[a] = T(double(g.dv[a]) + ds * t);
        }
      }
}

}  // namespace ref
}  // namespace qkv::kernels
