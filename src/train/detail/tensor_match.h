// Matching the tensors of a loaded safetensors file against the ones a model expects.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "qkv/io/safetensors.h"
#include "qkv/models/config.h"

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

// IoError naming `path` and the metadata key 'config' when the model `config` describes
// needs more than twice the values the file stores (`copies` per parameter: 1 in a model
// file, 3 in a training state with Adam's moments). Run before the model is built, so a
// file cannot make qkv allocate far more than its own size: its tensors cover exactly
// its data section, and the model built is at most about twice that (plus the position
// table, which models::validate bounds). Twice, not once: a tensor missing from a file
// is then still reported by match_tensors by name.
void check_config_fits(const models::ModelConfig& config, const io::SafetensorsFile& file,
                       const std::filesystem::path& path, int copies);

// ValueError naming `what` (e.g. "parameter encoder.x") and the element when `t` (F32 or
// F64) holds a NaN/Inf.
void check_finite(const Tensor& t, const std::string& what);

}  // namespace qkv::train::detail
