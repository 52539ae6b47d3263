// Embedding lookup: rows of a table selected by integer ids.
#pragma once

#include <cstdint>

#include "qkv/tensor/tensor.h"

namespace qkv::ops {

// table [V, E] (non-empty), ids [...] holding integers in [0, V) as floats (F32 or F64,
// whatever the table's dtype: they are indices, not values)
// -> [..., E] with out[i, :] = table[ids[i], :]. NaN / non-integer ids raise ValueError,
// out-of-range ids IndexError; messages name the value and its position.
Tensor embedding(const TensorView& table, const TensorView& ids);

// out = table[ids]:  dtable[v, :] = Σ_{i: ids[i] = v} dy[i, :] (repeated ids accumulate in
// index order: deterministic). dy [..., E], ids [...] -> dtable [vocab, E].
Tensor embedding_backward(const TensorView& dy, const TensorView& ids, int64_t vocab);

}  // namespace qkv::ops
