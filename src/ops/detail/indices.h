// Index tensors arrive as float tensors (Tensor holds only float dtypes). This turns
// them into int32 ids for the kernels, rejecting anything that is not an exact index.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::ops::detail {

struct IndexRule {
  std::string_view op;                  // "embedding"
  std::string_view what;                // "id", "target"
  int64_t upper = 0;                    // valid values are [0, upper)
  std::optional<int64_t> also_allowed;  // e.g. cross_entropy's ignore_index
};

// ids [...] -> ids as int32 in row-major order. NaN, ±inf and non-integers raise
// ValueError; values outside [0, upper) (and not also_allowed) raise IndexError. Each
// message names the value, its position (flat and as a multi-index) and the tensor.
std::vector<int32_t> to_indices(const TensorView& ids, const IndexRule& rule);

}  // namespace qkv::ops::detail
