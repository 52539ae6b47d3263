#include "detail/kv_cache.h"

#include <cstring>
#include <utility>
#include <vector>

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
  return buffer_.slice(0, 0, rows_).slice(2, 0, length_);
}

void KvCache::grow(int64_t capacity) {
  const Shape& s = buffer_.shape();
  Tensor bigger = Tensor::empty({s[0], s[1], capacity, s[3]}, buffer_.dtype());
  if (length_ > 0) copy_into(view(), bigger.slice(0, 0, rows_).slice(2, 0, length_));
  buffer_ = std::move(bigger);
}

void KvCache::append(const Tensor& row) {
  QKV_CHECK(row.defined() && row.rank() == 4 && row.dim(2) == 1, ShapeError,
            "KvCache::append: row ", row.defined() ? describe(row) : std::string("undefined"),
            " is not [B, H, 1, Dh]");
  if (!buffer_.defined() || length_ == 0) {
    const Shape& r = row.shape();
    // A cleared cache keeps a buffer with enough rows for its next batch. (The
    // Transformer's decoder state, and so its caches, is made anew for each batch.)
    if (!buffer_.defined() || buffer_.dtype() != row.dtype() || buffer_.dim(0) < r[0] ||
        buffer_.dim(1) != r[1] || buffer_.dim(3) != r[3]) {
      buffer_ = Tensor::empty({r[0], r[1], kInitialCapacity, r[3]}, row.dtype());
    }
    rows_ = r[0];
  }
  QKV_CHECK(row.dtype() == buffer_.dtype() && row.dim(0) == rows_ && row.dim(1) == buffer_.dim(1) &&
                row.dim(3) == buffer_.dim(3),
            ShapeError, "KvCache::append: row ", describe(row), " does not match the cache ",
            describe(view()));
  if (length_ == buffer_.dim(2)) grow(2 * buffer_.dim(2));
  copy_into(row, buffer_.slice(0, 0, rows_).slice(2, length_, length_ + 1));
  ++length_;
}

// Copies the filled positions of row `from` of `src` to row `to` of `dst` (both shaped
// like buffer_ in H, capacity and Dh): each (row, head) holds its positions in one dense run.
void KvCache::copy_row(const Tensor& src, int64_t from, const Tensor& dst, int64_t to) const {
  const Shape& s = buffer_.shape();
  const size_t elem = dtype_size(buffer_.dtype());
  const size_t run = size_t(length_ * s[3]) * elem;
  const size_t head = size_t(s[2] * s[3]) * elem;
  const auto* f = static_cast<const char*>(src.view().raw_data());
  auto* t = static_cast<char*>(dst.view().raw_data());
  for (int64_t h = 0; h < s[1]; ++h)
    std::memcpy(t + size_t(to * s[1] + h) * head, f + size_t(from * s[1] + h) * head, run);
}

void KvCache::reorder(std::span<const int64_t> indices) {
  QKV_CHECK(!indices.empty(), ValueError, "reorder: no rows to keep");
  if (!buffer_.defined()) return;
  for (size_t i = 0; i < indices.size(); ++i)
    QKV_CHECK(indices[i] >= 0 && indices[i] < rows_, IndexError, "reorder: indices[", i,
              "] = ", indices[i], " is outside the batch [0, ", rows_, ")");
  if (is_identity(indices, rows_)) return;
  const auto batch = int64_t(indices.size());
  const Shape& s = buffer_.shape();
  if (batch > s[0]) {  // more rows than the buffer holds (a beam's first expansion)
    Tensor wider = Tensor::empty({batch, s[1], s[2], s[3]}, buffer_.dtype());
    for (int64_t b = 0; b < batch; ++b) copy_row(buffer_, indices[size_t(b)], wider, b);
    buffer_ = std::move(wider);
    rows_ = batch;
    return;
  }
  // In place, copying only the rows that change: a beam keeps most of its rows from one
  // step to the next, and dropping finished sentences shifts the rest. Row b is written
  // only after every row reading from it has been copied; the rows left then form cycles
  // (a permutation's), each broken by setting one row aside.
  std::vector<int64_t> readers(size_t(rows_), 0);  // unwritten destinations reading each row
  auto moves = [&](int64_t b) { return b < batch && indices[size_t(b)] != b; };
  for (int64_t b = 0; b < batch; ++b)
    if (moves(b)) ++readers[size_t(indices[size_t(b)])];
  std::vector<int64_t> ready;
  std::vector<char> done(size_t(batch), 0);
  std::vector<int64_t> aside(size_t(rows_), -1);  // a row's place among the rows set aside
  std::vector<Tensor> set_aside;                  // each [1, H, capacity, Dh]
  for (int64_t b = 0; b < batch; ++b)
    if (moves(b) && (b >= rows_ || readers[size_t(b)] == 0)) ready.push_back(b);
  auto write = [&](int64_t b) {
    const int64_t from = indices[size_t(b)];
    if (const int64_t a = aside[size_t(from)]; a >= 0)
      copy_row(set_aside[size_t(a)], 0, buffer_, b);
    else
      copy_row(buffer_, from, buffer_, b);
    done[size_t(b)] = 1;
    if (--readers[size_t(from)] == 0 && moves(from) && !done[size_t(from)]) ready.push_back(from);
  };
  for (int64_t b = 0;; ++b) {
    while (!ready.empty()) {
      const int64_t next = ready.back();
      ready.pop_back();
      write(next);
    }
    while (b < batch && (!moves(b) || done[size_t(b)])) ++b;
    if (b == batch) break;
    // b lies on a cycle: keep its current contents for its readers.
    set_aside.push_back(Tensor::empty({1, s[1], s[2], s[3]}, buffer_.dtype()));
    copy_row(buffer_, b, set_aside.back(), 0);
    aside[size_t(b)] = int64_t(set_aside.size()) - 1;
    ready.push_back(b);
  }
  rows_ = batch;
}
}  // namespace qkv::models::detail
