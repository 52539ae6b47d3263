// Saving: the header is built (and the arguments validated) before the file is touched,
// then prefix, header and each tensor's bytes are streamed through one sink, so the
// file and the in-memory serialisation are the same bytes by construction.
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "qkv/base/error.h"
#include "qkv/base/function_ref.h"
#include "qkv/base/utf8.h"
#include "qkv/io/atomic_file.h"
#include "qkv/io/safetensors.h"

namespace qkv::io {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swaps here");

// Keeps insertion order, so the header lists "__metadata__" first and tensors in data
// order, as the reference implementation does.
using OrderedJson = nlohmann::ordered_json;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

void check_utf8(std::string_view text, const char* what) {
  const size_t bad = utf8::first_invalid(text);
  QKV_CHECK(bad == std::string_view::npos, ValueError, "save_safetensors: ", what,
            " is not valid UTF-8 (byte ", bad, "); safetensors headers are UTF-8 JSON");
}

std::uint64_t byte_size(const Tensor& t) {
  return std::uint64_t(t.numel()) * dtype_size(t.dtype());
}

// The header JSON, padded with spaces to a multiple of 8 bytes (so the data section
// starts 8-byte aligned). Throws ValueError for bad names or tensors.
std::string make_header(const NamedTensors& tensors,
                        const std::map<std::string, std::string>& metadata) {
  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson& m = header["__metadata__"] = OrderedJson::object();
    for (const auto& [key, value] : metadata) {
      check_utf8(key, "a metadata key");
      check_utf8(value, ("the metadata value of \"" + key + "\"").c_str());
      m[key] = value;
    }
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    check_utf8(name, "a tensor name");
    QKV_CHECK(name != "__metadata__", ValueError,
              "save_safetensors: \"__metadata__\" is reserved and cannot name a tensor");
    QKV_CHECK(names.insert(name).second, ValueError, "save_safetensors: duplicate tensor name \"",
              name, "\"");
    QKV_CHECK(t.defined(), ValueError, "save_safetensors: tensor \"", name,
              "\" is undefined (a default-constructed Tensor)");
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = t.dtype() == DType::F64 ? "F64" : "F32";
    entry["shape"] = OrderedJson::array();
    for (std::int64_t d : t.shape().dims()) entry["shape"].push_back(std::uint64_t(d));
    const std::uint64_t end = offset + byte_size(t);
    entry["data_offsets"] = OrderedJson::array({offset, end});
    header[name] = std::move(entry);
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// Streams the whole file through `sink`.
void emit(const std::string& header, const NamedTensors& tensors,
          FunctionRef<void(const void*, std::size_t)> sink) {
  const std::uint64_t n = header.size();
  sink(&n, sizeof n);
  sink(header.data(), header.size());
  for (const auto& [name, t] : tensors) {
    const Tensor c = t.contiguous();  // strided views are written in row-major order
    if (c.numel() > 0) sink(c.view().raw_data(), std::size_t(byte_size(c)));
  }
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string header = make_header(tensors, metadata);
  write_file_atomically(path, [&](Writer& w) {
    emit(header, tensors, [&](const void* data, std::size_t size) { w.write(data, size); });
  });
}

std::vector<std::byte> serialize_safetensors(const NamedTensors& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  const std::string header = make_header(tensors, metadata);
  std::vector<std::byte> out;
  emit(header, tensors, [&](const void* data, std::size_t size) {
    // resize + memcpy rather than insert(): GCC 12 at -O3 warns (falsely) that insert's
    // memmove writes into a region of size 0.
    const std::size_t old = out.size();
    out.resize(old + size);
    std::memcpy(out.data() + old, data, size);
  });
  return out;
}

}  // namespace qkv::io
