// safetensors files (https://github.com/huggingface/safetensors), the format qkv writes
// models in, so they load from Python (safetensors, numpy, PyTorch) as well:
//
//   [u64 little-endian N][N bytes of UTF-8 JSON header, space-padded][data section]
//   header = {"__metadata__": {"key": "value", ...},
//             "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//
// Offsets are relative to the start of the data section; tensors are row-major and
// little-endian, and together cover the data section exactly. qkv reads and writes the
// F32 and F64 dtypes.
//
// Loading validates everything before it allocates (so a hostile file cannot make qkv
// allocate more than the file's size) and throws IoError naming the file, the tensor and
// the exact problem: bad lengths, malformed JSON, unknown keys or dtypes, shapes that
// overflow, sizes that do not match, overlapping tensors, holes, trailing bytes, ...
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::io {

// Headers larger than this are rejected (the reference implementation's limit is 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = std::uint64_t{100} << 20;

struct SafetensorsFile {
  // Contiguous tensors in the order their data appears in the file.
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty when absent

  // The tensor called `name`, or nullptr.
  const Tensor* find(std::string_view name) const noexcept;
};

// Writes `tensors` (any shape, F32 or F64, strided views written contiguously) in the
// given order, with `metadata` as "__metadata__" (omitted when empty), atomically via
// write_file_atomically. The bytes depend only on the arguments: the same input gives an
// identical file. The header is the JSON the reference implementation writes
// ("__metadata__" first, then tensors in data order; keys dtype, shape, data_offsets;
// no spaces; padded with spaces to a multiple of 8 bytes).
// Throws ValueError for an undefined tensor, a duplicate or reserved ("__metadata__")
// name, or a name or metadata string that is not valid UTF-8; IoError if writing fails.
void save_safetensors(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The bytes save_safetensors writes, in memory (tests, fuzzing, small payloads).
std::vector<std::byte> serialize_safetensors(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// Reads and validates a safetensors file; tensors are copied into fresh contiguous
// Tensors. Throws IoError (naming `path`) for a missing/unreadable file or any
// malformation.
SafetensorsFile load_safetensors(const std::filesystem::path& path);

// The same from bytes in memory; `source` names them in error messages.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes,
                                  std::string_view source = "<memory>");

}  // namespace qkv::io
