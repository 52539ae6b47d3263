#include "detail/source_rows.h"

#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "detail/common.h"
#include "qkv/base/error.h"

namespace qkv::models::detail {

SourceRows::SourceRows(Tensor per_source) {
  QKV_CHECK(per_source.defined() && per_source.rank() >= 1 && per_source.dim(0) >= 1, ShapeError,
            "SourceRows: ", per_source.defined() ? describe(per_source) : std::string("undefined"),
            " has no source rows");
  source_ = per_source.contiguous();
  rows_ = source_;
  origin_.resize(size_t(source_.dim(0)));
  std::iota(origin_.begin(), origin_.end(), int64_t{0});
}

void SourceRows::reorder(std::span<const int64_t> indices) {
  // Checks every index against B before anything changes.
  std::vector<int64_t> origin = gather_rows(origin_, indices);
  const auto batch = int64_t(origin.size());
  if (!buffer_.defined() || buffer_.dim(0) < batch) {
    buffer_ = Tensor::empty(source_.shape().with_dim(0, batch), source_.dtype());
    holds_.assign(size_t(batch), -1);
  }
  const size_t row_bytes = size_t(source_.numel() / source_.dim(0)) * dtype_size(source_.dtype());
  const auto* from = static_cast<const char*>(source_.view().raw_data());
  auto* to = static_cast<char*>(buffer_.view().raw_data());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t s = origin[size_t(b)];
    if (holds_[size_t(b)] == s) continue;  // already that source's row
    std::memcpy(to + size_t(b) * row_bytes, from + size_t(s) * row_bytes, row_bytes);
    holds_[size_t(b)] = s;
  }
  rows_ = buffer_.slice(0, 0, batch);
  origin_ = std::move(origin);
}

}  // namespace qkv::models::detail
