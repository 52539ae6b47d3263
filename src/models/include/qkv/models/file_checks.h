// What model files and training states share on disk: safetensors metadata values (a
// string -> string map: integers in decimal, doubles with 17 significant digits so they
// read back bit-exactly, lists comma-separated) and the check of a file's tensors against
// the ones a model expects. Every failure names the file and the key or tensor.
// Used by models' model files and train's training state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "qkv/io/safetensors.h"
#include "qkv/models/config.h"

namespace qkv::models::file_checks {

using Metadata = std::map<std::string, std::string>;

std::string format_double(double value);
std::string format_list(const std::vector<uint64_t>& values);

// IoError "FILE: metadata key 'KEY' is missing" / "... is not an integer: 'x'".
const std::string& get_string(const Metadata& m, const std::string& key,
                              const std::filesystem::path& file);
int64_t get_int(const Metadata& m, const std::string& key, const std::filesystem::path& file);
uint64_t get_uint(const Metadata& m, const std::string& key, const std::filesystem::path& file);
double get_double(const Metadata& m, const std::string& key, const std::filesystem::path& file);
std::vector<uint64_t> get_list(const Metadata& m, const std::string& key,
                               const std::filesystem::path& file);

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

}  // namespace qkv::models::file_checks
