// Loading: validate the prefix and the header (detail::parse_header), then allocate
// each tensor and copy its bytes. Allocation happens only after validation, and the
// validated tensors cover exactly the data section, so a file can never make qkv
// allocate more than its own size (plus a small per-tensor overhead).
#include <array>
#include <bit>
#include <cstring>

#include "detail/readable_file.h"
#include "detail/safetensors_layout.h"
#include "qkv/base/error.h"
#include "qkv/base/function_ref.h"
#include "qkv/io/safetensors.h"

namespace qkv::io {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swaps here");

void check_length(std::uint64_t size, std::string_view source) {
  QKV_CHECK(size >= 8, IoError, "safetensors file '", source, "': it is only ", size,
            " bytes; a safetensors file starts with an 8-byte header length");
}

// The tensors of a validated layout; `read(offset, dst, size)` copies `size` bytes from
// `offset` within the data section.
SafetensorsFile build_tensors(detail::SafetensorsLayout layout,
                              FunctionRef<void(std::uint64_t, std::byte*, std::size_t)> read) {
  SafetensorsFile out;
  out.metadata = std::move(layout.metadata);
  out.tensors.reserve(layout.tensors.size());
  for (detail::TensorEntry& e : layout.tensors) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    const std::size_t bytes = std::size_t(e.end - e.begin);
    if (bytes > 0) read(e.begin, static_cast<std::byte*>(t.view().raw_data()), bytes);
    out.tensors.emplace_back(std::move(e.name), std::move(t));
  }
  return out;
}

}  // namespace

const Tensor* SafetensorsFile::find(std::string_view name) const noexcept {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view source) {
  check_length(bytes.size(), source);
  const std::uint64_t n = detail::parse_header_length(bytes.first<8>(), bytes.size(), source);
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), std::size_t(n));
  detail::SafetensorsLayout layout = detail::parse_header(header, bytes.size() - 8 - n, source);
  const std::byte* data = bytes.data() + 8 + n;
  return build_tensors(std::move(layout),
                       [&](std::uint64_t offset, std::byte* dst, std::size_t size) {
                         std::memcpy(dst, data + offset, size);
                       });
}

SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  const std::string source = path.string();
  const detail::ReadableFile file(path);
  check_length(file.size(), source);
  std::array<std::byte, 8> prefix{};
  file.read_exactly(0, prefix.data(), prefix.size());
  const std::uint64_t n = detail::parse_header_length(prefix, file.size(), source);
  std::string header(std::size_t(n), '\0');
  file.read_exactly(8, reinterpret_cast<std::byte*>(header.data()), header.size());
  detail::SafetensorsLayout layout = detail::parse_header(header, file.size() - 8 - n, source);
  return build_tensors(std::move(layout),
                       [&](std::uint64_t offset, std::byte* dst, std::size_t size) {
                         file.read_exactly(8 + n + offset, dst, size);
                       });
}

}  // namespace qkv::io
