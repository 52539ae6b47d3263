// The validated layout of a safetensors file: what load needs to allocate and copy,
// computed from the 8-byte prefix and the header alone (before any allocation for data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/tensor/dtype.h"
#include "qkv/tensor/shape.h"

namespace qkv::io::detail {

struct TensorEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct SafetensorsLayout {
  std::vector<TensorEntry> tensors;  // sorted by data offset (file order)
  std::map<std::string, std::string> metadata;
};

// The header length N from the first 8 bytes of a file of `file_size` bytes, checked:
// 0 < N <= kMaxSafetensorsHeaderBytes and N <= file_size - 8. Throws IoError naming
// `source`. Requires file_size >= 8 (callers check it, with a message of their own).
std::uint64_t parse_header_length(std::span<const std::byte, 8> prefix, std::uint64_t file_size,
                                  std::string_view source);

// Parses and validates the header text for a data section of `data_size` bytes: every
// entry well-formed, sizes consistent, tensors covering the data section exactly.
// Throws IoError naming `source` and, where there is one, the tensor.
SafetensorsLayout parse_header(std::string_view header, std::uint64_t data_size,
                               std::string_view source);

}  // namespace qkv::io::detail
