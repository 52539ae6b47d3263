#include "detail/kv_cache.h"

#include <cstring>
#include <utility>

#include "qkv/base/error.h"

namespace qkv::models::detail {
namespace {

// Positions the first append reserves: most translations end within it, so the buffer
// rarely grows (each growth copies the filled part once).
constexpr int64_t kInitialCapacity = 32;

bool is_identity(std::span<const int64_t> indices, int64_t batch) {
  if (int64_t(indices.size()) != batch) return false;
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i] != int64_t(i)) return false;
  return true;
}

}  // namespace

Tensor KvCache::view() const {
  if (!buffer_.defined()) return Tensor();
  return buffer_.slice(2, 0, length_);
}

void KvCache::grow(int64_t capacity) {
  const Shape& s = buffer_.shape();
  Tensor bigger = Tensor::empty({s[0], s[1], capacity, s[3]}, buffer_.dtype());
  if (length_ > 0) copy_into(view(), bigger.slice(2, 0, length_));
  buffer_ = std::move(bigger);
  spare_ = Tensor();  // the old size: reallocated by the next reorder
}

void KvCache::append(const Tensor& row) {
  QKV_CHECK(row.defined() && row.rank() == 4 && row.dim(2) == 1, ShapeError,
            "KvCache::append: row ", row.defined() ? describe(row) : std::string("undefined"),
            " is not [B, H, 1, Dh]");
  if (!buffer_.defined() || length_ == 0) {
    const Shape& r = row.shape();
    if (!buffer_.defined() || buffer_.dtype() != row.dtype() || buffer_.dim(0) != r[0] ||
        buffer_.dim(1) != r[1] || buffer_.dim(3) != r[3]) {
      buffer_ = Tensor::empty({r[0], r[1], kInitialCapacity, r[3]}, row.dtype());
      spare_ = Tensor();
    }
  }
  QKV_CHECK(row.dtype() == buffer_.dtype() && row.dim(0) == buffer_.dim(0) &&
                row.dim(1) == buffer_.dim(1) && row.dim(3) == buffer_.dim(3),
            ShapeError, "KvCache::append: row ", describe(row), " does not match the cache ",
            describe(view()));
  if (length_ == buffer_.dim(2)) grow(2 * buffer_.dim(2));
  copy_into(row, buffer_.slice(2, length_, length_ + 1));
  ++length_;
}

void KvCache::reorder(std::span<const int64_t> indices) {
  QKV_CHECK(!indices.empty(), ValueError, "reorder: no rows to keep");
  if (!buffer_.defined()) return;
  const Shape& s = buffer_.shape();
  for (size_t i = 0; i < indices.size(); ++i)
    QKV_CHECK(indices[i] >= 0 && indices[i] < s[0], IndexError, "reorder: indices[", i,
              "] = ", indices[i], " is outside the batch [0, ", s[0], ")");
  if (is_identity(indices, s[0])) return;
  const auto batch = int64_t(indices.size());
  if (!spare_.defined() || spare_.dim(0) != batch)
    spare_ = Tensor::empty({batch, s[1], s[2], s[3]}, buffer_.dtype());
  // Each (row, head) holds its positions in one dense run: only the filled ones move.
  const size_t elem = dtype_size(buffer_.dtype());
  const size_t run = size_t(length_ * s[3]) * elem;
  const size_t head = size_t(s[2] * s[3]) * elem;
  const auto* from = static_cast<const char*>(buffer_.view().raw_data());
  auto* to = static_cast<char*>(spare_.view().raw_data());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < s[1]; ++h)
      std::memcpy(to + size_t(b * s[1] + h) * head,
                  from + size_t(indices[size_t(b)] * s[1] + h) * head, run);
  std::swap(buffer_, spare_);
}

}  // namespace qkv::models::detail
