// io::parse_safetensors on the input bytes. A file it accepts must survive a round trip:
// serialize_safetensors(tensors, metadata) parses back to the same names, dtypes, shapes
// and bytes (or the writer rejects it with a typed error, e.g. a name it cannot write).
#include <cstring>

#include "fuzz_util.h"
#include "qkv/io/safetensors.h"

namespace {

bool same_tensor(const qkv::Tensor& a, const qkv::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const size_t bytes = size_t(a.numel()) * qkv::dtype_size(a.dtype());
  return bytes == 0 || std::memcmp(a.view().raw_data(), b.view().raw_data(), bytes) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qkv;
  fuzz::expect_only_qkv_errors([&] {
    const io::SafetensorsFile file = io::parse_safetensors(fuzz::as_bytes(data, size), "fuzz");
    std::vector<std::byte> again;
    try {
      again = io::serialize_safetensors(file.tensors, file.metadata);
    } catch (const ValueError&) {
      return;  // a name or metadata value the writer refuses: allowed, not a round trip
    }
    const io::SafetensorsFile back = io::parse_safetensors(again, "fuzz round trip");
    if (back.metadata != file.metadata) fuzz::invariant_failed("metadata changed in a round trip");
    if (back.tensors.size() != file.tensors.size())
      fuzz::invariant_failed("tensor count changed in a round trip");
    for (size_t i = 0; i < file.tensors.size(); ++i) {
      const qkv::Tensor* t = back.find(file.tensors[i].first);
      if (t == nullptr || !same_tensor(*t, file.tensors[i].second))
        fuzz::invariant_failed("a tensor changed in a round trip");
    }
  });
  return 0;
}
