// Matching the tensors of a loaded safetensors file against the ones a model expects.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "qkv/io/safetensors.h"

namespace qkv::train::detail {

struct ExpectedTensor {
  std::string name;
  Shape shape;
};

// The tensors of `file` named in `expected`, in that order, after checking that each is
// present, float32, of the expected shape and finite, and that the file holds no other
// tensor. IoError naming `path` and the tensor for a missing, extra, wrongly typed or
// shaped one; ValueError naming the tensor and element for a NaN/Inf.
std::vector<const Tensor*> match_tensors(const io::SafetensorsFile& file,
                                         const std::vector<ExpectedTensor>& expected,
                                         const std::filesystem::path& path);

// ValueError naming `what` (e.g. "parameter encoder.x") and the element when `t` (F32 or
// F64) holds a NaN/Inf.
void check_finite(const Tensor& t, const std::string& what);

}  // namespace qkv::train::detail
