#include "qkv/ops/matmul.h"

#include "detail/checks.h"
#include "detail/kernel_select.h"
#include "qkv/ops/elementwise.h"

namespace qkv::ops {
namespace {

// The dimensions of one (possibly batched) product op(A)[M, K] · op(B)[K, N].
struct ProductDims {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
};

// One stored operand of a product: data, and whether it is used transposed.
template <class T>
struct Operand {
  const T* data;
  bool transposed;
};

// C[batch, m, n] = op(A) · op(B), with op(A) [m, k] and op(B) [k, n] row-major. The
// leading dimension of a stored matrix is its number of stored columns.
// The GemmSpec of one such product (C dense, added to when `add`).
kernels::GemmSpec product_spec(const ProductDims& d, bool trans_a, bool trans_b, bool add) {
  kernels::GemmSpec spec;
  spec.beta = add ? 1.0 : 0.0;
  spec.trans_a = trans_a;
  spec.trans_b = trans_b;
  spec.m = d.m;
  spec.n = d.n;
  spec.k = d.k;
  spec.lda = trans_a ? d.m : d.k;
  spec.ldb = trans_b ? d.k : d.n;
  spec.ldc = d.n;
  return spec;
}

template <class T>
void batched_product(const ProductDims& d, Operand<T> a, Operand<T> b, T* c, bool add = false) {
  const kernels::GemmSpec spec = product_spec(d, a.transposed, b.transposed, add);
  if (d.batch == 1) {
    kern::gemm(spec, a.data, b.data, c);
    return;
  }
  const kernels::BatchStrides strides{d.batch, d.m * d.k, d.k * d.n, d.m * d.n};
  kern::gemm_batched(spec, strides, a.data, b.data, c);
}

ProductDims check_matmul(const TensorView& a, const TensorView& b, const MatmulOptions& o) {
  detail::check_same_dtype("matmul", a, b);
  QKV_CHECK(a.rank() >= 2 && a.rank() == b.rank(), ShapeError, "matmul: ", describe(a), " x ",
            describe(b), ": operands need the same rank >= 2");
  for (int i = 0; i + 2 < a.rank(); ++i)
    QKV_CHECK(a.dim(i) == b.dim(i), ShapeError, "matmul: batch dims differ: ", describe(a), " x ",
              describe(b));
  ProductDims d;
  d.m = o.transpose_a ? a.dim(-1) : a.dim(-2);
  d.k = o.transpose_a ? a.dim(-2) : a.dim(-1);
  const int64_t kb = o.transpose_b ? b.dim(-1) : b.dim(-2);
  d.n = o.transpose_b ? b.dim(-2) : b.dim(-1);
  QKV_CHECK(d.k == kb, ShapeError, "matmul: inner dims differ: ", describe(a),
            o.transpose_a ? "ᵀ" : "", " x ", describe(b), o.transpose_b ? "ᵀ" : "");
  detail::check_not_empty("matmul", "a", a);
  detail::check_not_empty("matmul", "b", b);
  d.batch = a.shape().numel() / (a.dim(-1) * a.dim(-2));
  return d;
}

Shape output_shape(const TensorView& a, const ProductDims& d) {
  return a.shape().with_dim(-2, d.m).with_dim(-1, d.n);
}

}  // namespace

Tensor matmul(const TensorView& a, const TensorView& b, const MatmulOptions& options) {
  const ProductDims d = check_matmul(a, b, options);
  const detail::ContiguousInput ca(a), cb(b);
  Tensor c = Tensor::empty(output_shape(a, d), a.dtype());
  detail::visit_dtype(a.dtype(), [&]<class T>() {
    batched_product<T>(d, {ca.data<T>(), options.transpose_a}, {cb.data<T>(), options.transpose_b},
                       c.data<T>());
  });
  return c;
}

namespace {
// x · wᵀ + bias, then the ReLU when `relu` (linear and linear_relu).
Tensor linear_impl(std::string_view op, const TensorView& x, const TensorView& w,
                   const TensorView& bias, bool relu) {
  const MatmulOptions wt{.transpose_a = false, .transpose_b = true};
  const ProductDims d = check_matmul(x, w, wt);
  QKV_CHECK(x.rank() == 2, ShapeError, op, ": x ", describe(x), " is not [M, K]");
  detail::check_same_dtype(op, x, bias);
  QKV_CHECK(bias.rank() == 1 && bias.dim(0) == d.n, ShapeError, op, ": bias ", describe(bias),
            " is not [N = ", d.n, "]");
  const detail::ContiguousInput cx(x), cw(w), cb(bias);
  Tensor c = Tensor::empty(output_shape(x, d), x.dtype());
  // The product starts from the bias (kernels::gemm_with_bias): no zeroing, no pass after;
  // the ReLU in the same epilogue.
  detail::visit_dtype(x.dtype(), [&]<class T>() {
    const kernels::GemmSpec spec = product_spec(d, false, true, false);
    if (relu)
      kern::gemm_with_bias_relu(spec, cx.data<T>(), cw.data<T>(), cb.data<T>(), c.data<T>());
    else
      kern::gemm_with_bias(spec, cx.data<T>(), cw.data<T>(), cb.data<T>(), c.data<T>());
  });
  return c;
}
}  // namespace

Tensor linear(const TensorView& x, const TensorView& w, const TensorView& bias) {
  return linear_impl("linear", x, w, bias, false);
}

Tensor linear_relu(const TensorView& x, const TensorView& w, const TensorView& bias) {
  return linear_impl("linear_relu", x, w, bias, true);
}

Tensor linear_backward_through_relu(const TensorView& dy, const TensorView& w,
                                    const TensorView& relu_output) {
  constexpr std::string_view op = "linear_backward_through_relu";
  detail::check_same_dtype(op, dy, w);
  detail::check_same_dtype(op, dy, relu_output);
  QKV_CHECK(dy.rank() == 2 && w.rank() == 2 && relu_output.rank() == 2, ShapeError, op, ": dy ",
            describe(dy), ", w ", describe(w), ", relu_output ", describe(relu_output),
            " must all be matrices");
  const int64_t m = dy.dim(0), n = dy.dim(1), hidden = w.dim(1);
  QKV_CHECK(w.dim(0) == n, ShapeError, op, ": dy ", describe(dy), " and w ", describe(w),
            " differ in N (dy [M, N], w [N, K])");
  QKV_CHECK(relu_output.dim(0) == m && relu_output.dim(1) == hidden, ShapeError, op,
            ": relu_output ", describe(relu_output), " is not [M = ", m, ", K = ", hidden, "]");
  detail::check_not_empty(op, "w", w);
  Tensor dx = Tensor::empty(Shape{m, hidden}, dy.dtype());
  if (m == 0) return dx;
  const detail::ContiguousInput cdy(dy), cw(w), cg(relu_output);
  // dx [M, K] = dy [M, N] · w [N, K], gated by the ReLU's output in the product's epilogue.
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    kern::gemm_gated(product_spec({1, m, hidden, n}, false, false, false), cdy.data<T>(),
                     cw.data<T>(), cg.data<T>(), hidden, dx.data<T>());
  });
  return dx;
}

MatmulGrads matmul_backward(const TensorView& dy, const TensorView& a, const TensorView& b,
                            const MatmulOptions& options) {
  MatmulGrads g{Tensor::empty(a.shape(), a.dtype()), Tensor::empty(b.shape(), b.dtype())};
  matmul_backward_into(dy, a, b, options, {g.da}, {g.db});
  return g;
}

void matmul_backward_into(const TensorView& dy, const TensorView& a, const TensorView& b,
                          const MatmulOptions& options, const GradTarget& da,
                          const GradTarget& db) {
  const ProductDims d = check_matmul(a, b, options);
  QKV_CHECK(dy.shape() == output_shape(a, d), ShapeError, "matmul_backward: dy ", describe(dy),
            " does not match the product of ", describe(a), " x ", describe(b));
  detail::check_same_dtype("matmul_backward", dy, a);
  detail::check_grad_target("matmul_backward_into", "da", da, a);
  detail::check_grad_target("matmul_backward_into", "db", db, b);
  const detail::ContiguousInput cdy(dy), ca(a), cb(b);
  const bool ta = options.transpose_a, tb = options.transpose_b;
  detail::visit_dtype(a.dtype(), [&]<class T>() {
    const T* dyp = cdy.data<T>();
    const T* ap = ca.data<T>();
    const T* bp = cb.data<T>();
    // dop(A)[M, K] = dC[M, N] · op(B)ᵀ; stored transposed: dA[K, M] = op(B)[K, N] · dCᵀ.
    if (da.grad.defined()) {
      T* out = da.grad.data<T>();
      if (!ta)
        batched_product<T>({d.batch, d.m, d.k, d.n}, {dyp, false}, {bp, !tb}, out, da.add);
      else
        batched_product<T>({d.batch, d.k, d.m, d.n}, {bp, tb}, {dyp, true}, out, da.add);
    }
    // dop(B)[K, N] = op(A)ᵀ · dC; stored transposed: dB[N, K] = dCᵀ · op(A)[M, K].
    if (db.grad.defined()) {
      T* out = db.grad.data<T>();
      if (!tb)
        batched_product<T>({d.batch, d.k, d.n, d.m}, {ap, !ta}, {dyp, false}, out, db.add);
      else
        batched_product<T>({d.batch, d.n, d.k, d.m}, {dyp, true}, {ap, ta}, out, db.add);
    }
  });
}

Tensor linear_backward_into(const TensorView& dy, const TensorView& x, const TensorView& w,
                            const GradTarget& dx, const GradTarget& dw) {
  const MatmulOptions wt{.transpose_a = false, .transpose_b = true};
  if (!dw.grad.defined() || x.dtype() != DType::F32 || x.rank() != 2) {
    matmul_backward_into(dy, x, w, wt, dx, dw);
    return bias_gradient(dy);
  }
  matmul_backward_into(dy, x, w, wt, dx, {});  // checks every shape and dtype
  detail::check_grad_target("linear_backward_into", "dw", dw, w);
  const detail::ContiguousInput cdy(dy), cx(x);
  const int64_t rows = x.dim(0), in = x.dim(1), out = w.dim(0);
  // dw [N, K] = dyᵀ · x, the product matmul_backward_into makes for it: op(A) = dyᵀ,
  // whose row sums are the bias gradient.
  const kernels::GemmSpec s = product_spec({1, out, in, rows}, true, false, dw.add);
  Tensor dbias = Tensor::empty(Shape{out}, DType::F32);
  kernels::gemm_with_a_row_sums(s, cdy.data<float>(), cx.data<float>(), dw.grad.data<float>(),
                                dbias.data<float>());
  return dbias;
}

}  // namespace qkv::ops
