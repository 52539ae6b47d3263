// Cross-entropy of logits against integer targets, with label smoothing (Szegedy et al.
// 2016, sec. 7) and an ignore index for padding; the mean over the rows that count.
#pragma once

#include <cstdint>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct CrossEntropyOptions {
  double label_smoothing = 0.0;  // ε in [0, 1): target q = (1 − ε)·onehot(t) + ε/V
  int64_t ignore_index = -1;     // rows whose target equals this count for nothing
};

struct CrossEntropyResult {
  Tensor loss;               // [] mean of the per-row losses over counted rows (0 if none)
  Tensor lse;                // [...] log Σ_v exp(logits), saved for backward
  int64_t counted_rows = 0;  // rows whose target is not ignore_index
};

// logits [..., V] (non-empty), targets [...] holding integer class ids as floats (F32 or
// F64 whatever the logits' dtype: they are indices, not values), each in [0, V) or equal
// to ignore_index. NaN / non-integer targets raise ValueError, others out of range
// IndexError, naming the value and its position. Per row:
//   loss_r = lse_r − (1 − ε)·x_t − (ε/V)·Σ_v x_v,   loss = Σ_counted loss_r / counted_rows.
CrossEntropyResult cross_entropy(const TensorView& logits, const TensorView& targets,
                                 const CrossEntropyOptions& options = {});

// loss = Σ_r loss_r / n:  dlogits_r = (dloss / n) · (softmax(x_r) − q_r) for counted rows,
// 0 for ignored ones (and everywhere when n = 0). dloss [] (one element); logits, targets,
// lse as in / from cross_entropy -> dlogits [..., V].
Tensor cross_entropy_backward(const TensorView& dloss, const TensorView& logits,
                              const TensorView& targets, const TensorView& lse,
                              const CrossEntropyOptions& options = {});

}  // namespace qkv::ops
