// Helpers shared by the attention tests: random inputs and score parameters, the mask
// kinds every score kind is checked under, and a scalar objective for gradient checks.
#pragma once

#include <string>
#include <vector>

#include "qkv/attention/attention.h"
#include "qkv/autograd/functions.h"
#include "qkv/testing/tensors.h"

namespace qkv::attention::testing {

using autograd::Variable;
using qkv::testing::random_tensor;

inline Variable leaf(const Tensor& t, bool requires_grad = true) {
  return Variable(t, requires_grad);
}

inline const std::vector<ScoreKind>& all_kinds() {
  static const std::vector<ScoreKind> kinds = {ScoreKind::Dot, ScoreKind::ScaledDot,
                                               ScoreKind::Cosine, ScoreKind::General,
                                               ScoreKind::Additive};
  return kinds;
}

inline std::string kind_name(ScoreKind k) {
  switch (k) {
    case ScoreKind::Dot:
      return "dot";
    case ScoreKind::ScaledDot:
      return "scaled_dot";
    case ScoreKind::Cosine:
      return "cosine";
    case ScoreKind::General:
      return "general";
    case ScoreKind::Additive:
      return "additive";
  }
  return "?";
}

// Dq == Dk except for the parameterised kinds, which get Dk = Dq − 1 to prove they allow it.
inline int64_t key_dim(ScoreKind k, int64_t dq) {
  return (k == ScoreKind::General || k == ScoreKind::Additive) ? dq - 1 : dq;
}

// The parameter tensors a kind needs, in the order params_from() reads them:
// General {w [Dq, Dk]}; Additive {w [Dq, A], u [Dk, A], b [A], v [A]}; else {}.
inline std::vector<Tensor> param_tensors(ScoreKind k, int64_t dq, int64_t dk, int64_t hidden,
                                         DType dtype, uint64_t seed) {
  if (k == ScoreKind::General) return {random_tensor({dq, dk}, dtype, seed, 0.5)};
  if (k != ScoreKind::Additive) return {};
  return {random_tensor({dq, hidden}, dtype, seed, 0.5),
          random_tensor({dk, hidden}, dtype, seed + 1, 0.5),
          random_tensor({hidden}, dtype, seed + 2, 0.5),
          random_tensor({hidden}, dtype, seed + 3, 1.0)};
}

// ScoreParams over vars[first], vars[first + 1], ... as laid out by param_tensors().
inline ScoreParams params_from(ScoreKind k, const std::vector<Variable>& vars, size_t first) {
  ScoreParams p;
  if (k == ScoreKind::General) p.w = vars[first];
  if (k == ScoreKind::Additive) {
    p.w = vars[first];
    p.u = vars[first + 1];
    p.b = vars[first + 2];
    p.v = vars[first + 3];
  }
  return p;
}

enum class MaskKind { None, KeyLengths, Causal, Bias, Allowed, Combined, FullyMaskedRow };

inline const std::vector<MaskKind>& all_masks() {
  static const std::vector<MaskKind> masks = {
      MaskKind::None,    MaskKind::KeyLengths, MaskKind::Causal,        MaskKind::Bias,
      MaskKind::Allowed, MaskKind::Combined,   MaskKind::FullyMaskedRow};
  return masks;
}

inline std::string mask_name(MaskKind m) {
  const char* names[] = {"none",    "key_lengths", "causal",          "bias",
                         "allowed", "combined",    "fully_masked_row"};
  return names[int(m)];
}

// 0/1 "may attend" pattern [B, Tq, Tk]: hides (b + i + 2j) % 3 == 0, but never key 0.
inline Tensor pattern_allowed(int64_t batch, int64_t tq, int64_t tk, DType dtype) {
  Tensor a = Tensor::empty({batch, tq, tk}, DType::F64);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j)
        a.at<double>({b, i, j}) = (j > 0 && (b + i + 2 * j) % 3 == 0) ? 0.0 : 1.0;
  return a.to(dtype);
}

// A mask of the given kind for B = 2 rows of Tq queries and Tk >= 3 keys.
inline MaskSpec make_mask(MaskKind m, int64_t tq, int64_t tk, DType dtype) {
  MaskSpec s;
  const double inf = INFINITY;
  switch (m) {
    case MaskKind::None:
      break;
    case MaskKind::KeyLengths:
      s.key_lengths = {tk, tk - 2};
      break;
    case MaskKind::Causal:
      s.causal = true;
      break;
    case MaskKind::Bias:
      s.bias = random_tensor({tq, tk}, dtype, 77);
      if (dtype == DType::F64) s.bias.at<double>({0, tk - 1}) = -inf;
      if (dtype == DType::F32) s.bias.at<float>({0, tk - 1}) = -float(inf);
      break;
    case MaskKind::Allowed:
      s.allowed = pattern_allowed(2, tq, tk, dtype);
      break;
    case MaskKind::Combined:
      s.key_lengths = {tk, tk - 1};
      s.causal = true;
      s.bias = random_tensor({2, tq, tk}, dtype, 78);
      s.allowed = pattern_allowed(1, tq, tk, dtype).reshape({tq, tk});
      break;
    case MaskKind::FullyMaskedRow: {
      // Batch row 0 sees no key at all; query 0 of row 1 is hidden from every key.
      s.key_lengths = {0, tk};
      Tensor a = Tensor::full({2, tq, tk}, 1.0, DType::F64);
      for (int64_t j = 0; j < tk; ++j) a.at<double>({1, 0, j}) = 0.0;
      s.allowed = a.to(dtype);
      break;
    }
  }
  return s;
}

// A scalar depending on every element of y with a distinct fixed weight.
inline Variable project(const Variable& y, uint64_t seed) {
  const Variable w(random_tensor(y.value().shape(), y.value().dtype(), seed), false);
  return autograd::sum(autograd::mul(y, w));
}

}  // namespace qkv::attention::testing
