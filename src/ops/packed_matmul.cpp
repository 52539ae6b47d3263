#include "qkv/ops/packed_matmul.h"

#include <optional>

#include "detail/checks.h"
#include "qkv/kernels/packed_gemm.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/matmul.h"

namespace qkv::ops {

PackedWeight::PackedWeight(const TensorView& w) {
  QKV_CHECK(w.rank() == 2, ShapeError, "PackedWeight: w ", describe(w), " must be [N, K]");
  detail::check_not_empty("PackedWeight", "w", w);
  n_ = w.dim(0);
  k_ = w.dim(1);
  dtype_ = w.dtype();
  const detail::ContiguousInput cw(w);
  if (dtype_ == DType::F64) {
    packed_ = Tensor::empty(w.shape(), DType::F64);
    copy_into(cw.view(), packed_.view());
    return;
  }
  packed_ = Tensor::empty({kernels::packed_transposed_size(n_, k_)}, DType::F32);
  kernels::pack_transposed(cw.data<float>(), n_, k_, k_, packed_.data<float>());
}

Tensor matmul_packed(const TensorView& x, const PackedWeight& w, const TensorView* bias) {
  QKV_CHECK(x.rank() == 2 && x.dim(1) == w.cols(), ShapeError, "matmul_packed: x ", describe(x),
            " must be [M, ", w.cols(), "] for a packed weight [", w.rows(), ", ", w.cols(), "]");
  QKV_CHECK(x.dtype() == w.dtype(), ValueError, "matmul_packed: x is ", dtype_name(x.dtype()),
            ", the packed weight ", dtype_name(w.dtype()), " (convert one with Tensor::to)");
  if (bias) {
    QKV_CHECK(bias->rank() == 1 && bias->dim(0) == w.rows(), ShapeError, "matmul_packed: bias ",
              describe(*bias), " must be [", w.rows(), "] for a packed weight [", w.rows(), ", ",
              w.cols(), "]");
    detail::check_same_dtype("matmul_packed", x, *bias);
  }
  if (w.dtype() == DType::F64) {
    Tensor y = matmul(x, w.packed_.view(), {.transpose_b = true});
    return bias ? add_bias(y, *bias) : y;
  }
  const detail::ContiguousInput cx(x);
  const std::optional<detail::ContiguousInput> cb =
      bias ? std::optional<detail::ContiguousInput>(std::in_place, *bias) : std::nullopt;
  Tensor y = Tensor::empty({x.dim(0), w.rows()}, DType::F32);
  kernels::gemm_packed(cx.data<float>(), x.dim(0), w.cols(), w.cols(), w.packed_.data<float>(),
                       w.rows(), y.data<float>(), w.rows(), cb ? cb->data<float>() : nullptr);
  return y;
}

}  // namespace qkv::ops
