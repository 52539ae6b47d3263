// The output projection fused with the label-smoothed cross-entropy, computed in row
// chunks so that the [rows, V] logits and their gradient never exist whole (issue 13,
// item 2). The composed path, matmul (+ add_bias) then cross_entropy, is the oracle.
//
// Per chunk of rows: logits_c = h_c Wᵀ (+ b), then the cross_entropy kernels give the
// rows' losses and, when gradients are wanted, G_c = (softmax(logits_c) − q) / n for the
// n counted rows, from which
//   dh_c = G_c W,   dW += G_cᵀ h_c,   db += Σ_rows G_c.
// The gradients are formed here, in the forward pass, for d(loss) = 1: the loss is linear
// in its upstream gradient, so backward only scales them. That costs three GEMMs like the
// composed path, where recomputing the chunk's logits in backward would cost a fourth
// (+ 1/3 of the projection's FLOPs: ~0.36 s per update for the Transformer benchmark,
// 6.3k rows × V 8000 × E 256, at 71 GFLOP/s); and keeps [rows, E] + [V, E] instead of the
// logits and their gradient ([rows, V] twice, 400 MB for that benchmark).
//
// Rows whose target is ignore_index (padding) are not computed at all: their loss and
// dh are 0 whatever their hidden state holds, so the chunks run over the counted rows
// only (gathered when they are not adjacent). A batch padded to its longest sentence
// spends nothing on the output layer for its padding.
#pragma once

#include <cstdint>

#include "qkv/ops/cross_entropy.h"
#include "qkv/tensor/tensor.h"

namespace qkv::ops {

struct LinearCrossEntropyOptions {
  CrossEntropyOptions loss;
  bool want_gradients = true;  // false: the loss only (evaluation, finite differences)
  int64_t chunk_rows = 0;      // rows per chunk; 0 = linear_cross_entropy_chunk_rows(V)
};

struct LinearCrossEntropyResult {
  Tensor loss;               // [] as cross_entropy's: mean over the counted rows
  int64_t counted_rows = 0;  // rows whose target is not ignore_index
  // d(loss)/d(input) for d(loss) = 1 when want_gradients, else undefined.
  Tensor dhidden;  // [..., E]
  Tensor dweight;  // [V, E]
  Tensor dbias;    // [V], undefined without a bias
};

// The default chunk: the largest row count whose logits fit in 2^22 floats (16 MB, one
// buffer: the chunk's gradient is written over its logits), rounded down to a multiple
// of 256 rows when it is larger. At V 8000 that is 512 rows. Why the multiple: a chunk's
// dW += Gᵀ h_c is a product over k = the chunk's rows, which qkv's GEMM cuts into
// 512-deep slices, each a pass over dW ([V, E], 8 MB); 524 rows made a 12-deep third
// slice, and BM_LinearCrossEntropy ran 15 % slower at 1048 rows than at 1024. Against
// the 262 rows of two 8 MB buffers (logits and a separate gradient) before: W is packed
// half as often and dW read and written half as often, 1 thread 557 -> 537 ms, 2 threads
// 291 -> 254 ms (6,400 rows, E 256, V 8000, three interleaved rounds each, AMD EPYC
// Zen 5 VM). Memory is unchanged (16 MB). The first version's measured effect of
// chunking, `qkv train` Transformer d256 V 8000 on Multi30k, 2 threads, 6 updates: peak
// RSS 3.74 GB -> 3.39 GB.
int64_t linear_cross_entropy_chunk_rows(int64_t vocab);

// hidden [..., E], weight [V, E], bias [V] or nullptr, targets [...] (class ids as floats,
// each in [0, V) or == ignore_index) -> the mean loss of cross_entropy(hidden Wᵀ + b,
// targets). Errors as matmul's and cross_entropy's, naming linear_cross_entropy. Every
// input's dtype must match. Bitwise identical for any thread count; within float
// rounding of the composed path (the chunked GEMMs sum in another order).
LinearCrossEntropyResult linear_cross_entropy(const TensorView& hidden, const TensorView& weight,
                                              const TensorView* bias, const TensorView& targets,
                                              const LinearCrossEntropyOptions& options = {});

}  // namespace qkv::ops
