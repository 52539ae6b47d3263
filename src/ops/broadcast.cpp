#include "qkv/ops/broadcast.h"

#include "detail/checks.h"
#include "detail/kernel_select.h"

namespace qkv::ops {

Tensor pairwise_add(const TensorView& a, const TensorView& c) {
  constexpr std::string_view op = "pairwise_add";
  detail::check_same_dtype(op, a, c);
  QKV_CHECK(a.rank() == 3 && c.rank() == 3 && a.dim(0) == c.dim(0) && a.dim(2) == c.dim(2),
            ShapeError, op, ": expected a [B, Tq, A] and c [B, Tk, A], got ", describe(a), " and ",
            describe(c));
  detail::check_not_empty(op, "a", a);
  detail::check_not_empty(op, "c", c);
  const int64_t batch = a.dim(0), tq = a.dim(1), tk = c.dim(1), width = a.dim(2);
  const detail::ContiguousInput ca(a), cc(c);
  Tensor y = Tensor::empty(Shape{batch, tq, tk, width}, a.dtype());
  detail::visit_dtype(a.dtype(), [&]<class T>() {
    const T *ap = ca.data<T>(), *cp = cc.data<T>();
    T* out = y.data<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < tq; ++i)
        for (int64_t j = 0; j < tk; ++j)
          kern::add(ap + (b * tq + i) * width, cp + (b * tk + j) * width,
                    out + ((b * tq + i) * tk + j) * width, width);
  });
  return y;
}

BinaryGrads pairwise_add_backward(const TensorView& dy) {
  QKV_CHECK(dy.rank() == 4, ShapeError, "pairwise_add_backward: expected dy [B, Tq, Tk, A], got ",
            describe(dy));
  detail::check_not_empty("pairwise_add_backward", "dy", dy);
  const int64_t batch = dy.dim(0), tq = dy.dim(1), tk = dy.dim(2), width = dy.dim(3);
  const detail::ContiguousInput cdy(dy);
  Tensor da = Tensor::empty(Shape{batch, tq, width}, dy.dtype());
  Tensor dc = Tensor::empty(Shape{batch, tk, width}, dy.dtype());
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    const T* g = cdy.data<T>();
    for (int64_t b = 0; b < batch; ++b) {
      const T* gb = g + b * tq * tk * width;
      // da[b, i, :] = Σ_j dy[b, i, j, :]: columns sums of the [Tk, A] block of query i.
      for (int64_t i = 0; i < tq; ++i)
        kern::sum_cols(gb + i * tk * width, da.data<T>() + (b * tq + i) * width, tk, width);
      // dc[b, :, :] = Σ_i dy[b, i, :, :]: column sums of dy[b] seen as [Tq, Tk·A].
      kern::sum_cols(gb, dc.data<T>() + b * tk * width, tq, tk * width);
    }
  });
  return {da, dc};
}

}  // namespace qkv::ops
