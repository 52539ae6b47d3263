#include "qkv/ops/linear_cross_entropy.h"

#include <algorithm>
#include <vector>

#include "detail/checks.h"
#include "detail/indices.h"
#include "detail/kernel_select.h"

namespace qkv::ops {
namespace {

constexpr std::string_view kOp = "linear_cross_entropy";

struct Dims {
  int64_t rows = 0, dim = 0, vocab = 0;
};

Dims checked_dims(const TensorView& hidden, const TensorView& weight, const TensorView* bias,
                  const TensorView& targets, const LinearCrossEntropyOptions& o) {
  detail::check_min_rank(kOp, "hidden", hidden, 1);
  detail::check_not_empty(kOp, "hidden", hidden);
  detail::check_not_empty(kOp, "weight", weight);
  detail::check_same_dtype(kOp, hidden, weight);
  QKV_CHECK(weight.rank() == 2 && weight.dim(1) == hidden.dim(-1), ShapeError, kOp, ": weight ",
            describe(weight), " must be [V, ", hidden.dim(-1), "] for hidden ", describe(hidden));
  if (bias) {
    detail::check_same_dtype(kOp, hidden, *bias);
    QKV_CHECK(bias->rank() == 1 && bias->dim(0) == weight.dim(0), ShapeError, kOp, ": bias ",
              describe(*bias), " must be [", weight.dim(0), "]");
  }
  QKV_CHECK(targets.shape() == hidden.shape().without_dim(-1), ShapeError, kOp, ": targets ",
            describe(targets), " do not match hidden ", describe(hidden));
  const double eps = o.loss.label_smoothing;
  QKV_CHECK(eps >= 0.0 && eps < 1.0, ValueError, kOp, ": label_smoothing ", eps,
            " is outside [0, 1)");
  QKV_CHECK(o.chunk_rows >= 0, ValueError, kOp, ": chunk_rows ", o.chunk_rows, " is negative");
  return {hidden.shape().rows(), hidden.dim(-1), weight.dim(0)};
}

// The raw pointers of one call, and its scratch: a chunk's logits and their gradient.
template <class T>
struct Work {
  Dims d;
  const T* h;                      // [rows, E]
  const T* w;                      // [V, E]
  const T* b;                      // [V] or nullptr
  const int32_t* ids;              // [rows]
  kernels::CrossEntropySpec spec;  // rows set per chunk
  T* row_loss;                     // [rows]
  T* lse;                          // [rows]
  T* logits;                       // [chunk, V]
  T* grad;                         // [chunk, V]
  T* row_scale;                    // [chunk], 1 / counted
  T* bias_sum;                     // [V]
};

// logits[n, V] = h[r0 : r0 + n] Wᵀ (+ b): the composed path's matmul, then add_bias.
template <class T>
void chunk_logits(const Work<T>& k, int64_t r0, int64_t n) {
  kernels::GemmSpec s;
  s.trans_b = true;
  s.m = n, s.n = k.d.vocab, s.k = k.d.dim;
  s.lda = k.d.dim, s.ldb = k.d.dim, s.ldc = k.d.vocab;
  kern::gemm(s, k.h + r0 * k.d.dim, k.w, k.logits);
  if (!k.b) return;
  for (int64_t r = 0; r < n; ++r) {
    T* row = k.logits + r * k.d.vocab;
    for (int64_t v = 0; v < k.d.vocab; ++v) row[v] += k.b[v];
  }
}

// From the chunk's gradient G [n, V]: dh rows r0.. = G W, dW (+)= Gᵀ h, db += Σ_rows G.
template <class T>
void chunk_gradients(const Work<T>& k, int64_t r0, int64_t n, T* dh, T* dw, T* db) {
  const int64_t E = k.d.dim, V = k.d.vocab;
  kernels::GemmSpec s;
  s.m = n, s.n = E, s.k = V;
  s.lda = V, s.ldb = E, s.ldc = E;
  kern::gemm(s, k.grad, k.w, dh + r0 * E);
  kernels::GemmSpec t;
  t.trans_a = true;
  t.m = V, t.n = E, t.k = n;
  t.lda = V, t.ldb = E, t.ldc = E;
  t.beta = r0 == 0 ? 0.0 : 1.0;  // the chunks add up in a fixed order
  kern::gemm(t, k.grad, k.h + r0 * E, dw);
  if (!db) return;
  kern::sum_cols(k.grad, k.bias_sum, n, V);
  for (int64_t v = 0; v < V; ++v) db[v] += k.bias_sum[v];
}

template <class T>
void run_chunks(const Work<T>& k, int64_t chunk, LinearCrossEntropyResult& r) {
  T* dh = r.dhidden.defined() ? r.dhidden.data<T>() : nullptr;
  T* dw = r.dweight.defined() ? r.dweight.data<T>() : nullptr;
  T* db = r.dbias.defined() ? r.dbias.data<T>() : nullptr;
  for (int64_t r0 = 0; r0 < k.d.rows; r0 += chunk) {
    const int64_t n = std::min(chunk, k.d.rows - r0);
    chunk_logits(k, r0, n);
    kernels::CrossEntropySpec spec = k.spec;
    spec.rows = n;
    kern::cross_entropy_forward(k.logits, k.ids + r0, k.row_loss + r0, k.lse + r0, spec);
    if (!dh) continue;
    kern::cross_entropy_backward(k.logits, k.ids + r0, k.lse + r0, k.row_scale, k.grad, spec);
    chunk_gradients(k, r0, n, dh, dw, db);
  }
}

}  // namespace

int64_t linear_cross_entropy_chunk_rows(int64_t vocab) {
  constexpr int64_t kChunkFloats = int64_t{1} << 21;
  return std::max<int64_t>(1, kChunkFloats / std::max<int64_t>(1, vocab));
}

LinearCrossEntropyResult linear_cross_entropy(const TensorView& hidden, const TensorView& weight,
                                              const TensorView* bias, const TensorView& targets,
                                              const LinearCrossEntropyOptions& options) {
  const Dims d = checked_dims(hidden, weight, bias, targets, options);
  const std::vector<int32_t> ids =
      detail::to_indices(targets, {kOp, "target", d.vocab, options.loss.ignore_index});
  const int64_t chunk =
      std::min(d.rows, options.chunk_rows > 0 ? options.chunk_rows
                                              : linear_cross_entropy_chunk_rows(d.vocab));
  const DType dt = hidden.dtype();
  LinearCrossEntropyResult r{Tensor::empty(Shape{}, dt)};
  r.counted_rows = std::count_if(ids.begin(), ids.end(),
                                 [&](int32_t t) { return t != options.loss.ignore_index; });
  if (options.want_gradients) {
    r.dhidden = Tensor::empty(hidden.shape(), dt);
    r.dweight = Tensor::empty(weight.shape(), dt);
    if (bias) r.dbias = Tensor::zeros(bias->shape(), dt);
  }
  const detail::ContiguousInput ch(hidden), cw(weight);
  const std::optional<detail::ContiguousInput> cb =
      bias ? std::optional<detail::ContiguousInput>(std::in_place, *bias) : std::nullopt;
  Tensor row_loss = Tensor::empty({d.rows}, dt), lse = Tensor::empty({d.rows}, dt);
  Tensor logits = Tensor::empty({chunk, d.vocab}, dt);
  const bool grads = options.want_gradients;
  Tensor grad = grads ? Tensor::empty({chunk, d.vocab}, dt) : Tensor();
  // d(loss)/d(loss_r) = 1 / counted for every counted row (the kernel zeroes ignored ones).
  const double per_row = r.counted_rows == 0 ? 0.0 : 1.0 / double(r.counted_rows);
  Tensor row_scale = Tensor::full({chunk}, per_row, dt);
  Tensor bias_sum = grads && bias ? Tensor::empty({d.vocab}, dt) : Tensor();
  detail::visit_dtype(dt, [&]<class T>() {
    auto ptr = [](Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    const Work<T> k{d,
                    ch.data<T>(),
                    cw.data<T>(),
                    cb ? cb->data<T>() : nullptr,
                    ids.data(),
                    {0, d.vocab, options.loss.label_smoothing, int32_t(options.loss.ignore_index)},
                    row_loss.data<T>(),
                    lse.data<T>(),
                    logits.data<T>(),
                    ptr(grad),
                    row_scale.data<T>(),
                    ptr(bias_sum)};
    run_chunks(k, chunk, r);
    // Ignored rows hold 0, so summing all rows equals summing the counted ones.
    const double total = double(kern::sum(row_loss.data<T>(), d.rows));
    *r.loss.data<T>() = r.counted_rows == 0 ? T(0) : T(total / double(r.counted_rows));
  });
  return r;
}

}  // namespace qkv::ops
