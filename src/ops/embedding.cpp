#include "qkv/ops/embedding.h"

#include "detail/checks.h"
#include "detail/indices.h"
#include "detail/kernel_select.h"

namespace qkv::ops {

Tensor embedding(const TensorView& table, const TensorView& ids) {
  QKV_CHECK(table.rank() == 2, ShapeError, "embedding: table ", describe(table), " must be [V, E]");
  detail::check_not_empty("embedding", "table", table);
  QKV_CHECK(ids.rank() < kMaxRank, ShapeError, "embedding: ids ", describe(ids),
            " leave no room for the embedding dim");
  const std::vector<int32_t> index =
      detail::to_indices(ids, {"embedding", "id", table.dim(0), std::nullopt});
  Shape out_shape = ids.shape();
  out_shape.push_back(table.dim(1));
  const detail::ContiguousInput ct(table);
  Tensor out = Tensor::empty(out_shape, table.dtype());
  detail::visit_dtype(table.dtype(), [&]<class T>() {
    kern::embedding_gather(ct.data<T>(), index.data(), out.data<T>(), ids.numel(), table.dim(1));
  });
  return out;
}

Tensor embedding_backward(const TensorView& dy, const TensorView& ids, int64_t vocab) {
  QKV_CHECK(vocab > 0, ValueError, "embedding_backward: vocab ", vocab, " must be positive");
  QKV_CHECK(dy.rank() == ids.rank() + 1 && dy.shape().without_dim(-1) == ids.shape(), ShapeError,
            "embedding_backward: dy ", describe(dy), " does not match ids ", describe(ids));
  const std::vector<int32_t> index =
      detail::to_indices(ids, {"embedding_backward", "id", vocab, std::nullopt});
  const detail::ContiguousInput cdy(dy);
  const int64_t dim = dy.dim(-1);
  Tensor dtable = Tensor::zeros(Shape{vocab, dim}, dy.dtype());
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    kern::embedding_scatter_add(cdy.data<T>(), index.data(), dtable.data<T>(), ids.numel(), dim);
  });
  return dtable;
}

}  // namespace qkv::ops
