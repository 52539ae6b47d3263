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

// The raw pointers of one call, and its scratch. Only the counted rows (target not
// ignore_index) are computed: `kept` lists them in order, and each chunk takes the next
// `chunk` of them. A chunk whose rows lie next to each other in `h` is read in place;
// otherwise its rows are gathered into `h_rows` and its dh rows scattered back.
template <class T>
struct Work {
  Dims d;
  const T* h;                      // [rows, E]
  const T* w;                      // [V, E]
  const T* b;                      // [V] or nullptr
  const int64_t* kept;             // [counted]: the rows computed, ascending
  int64_t counted;                 // how many
  const int32_t* ids;              // [counted]: their targets
  kernels::CrossEntropySpec spec;  // rows set per chunk
  T* row_loss;                     // [rows], ignored rows stay 0
  T* chunk_loss;                   // [chunk]
  T* lse;                          // [chunk]
  T* logits;                       // [chunk, V]; their gradient is written over them
  T* row_scale;                    // [chunk], 1 / counted
  T* bias_sum;                     // [V]
  T* h_rows;                       // [chunk, E]: a gathered chunk's hidden rows
  T* dh_rows;                      // [chunk, E]: and their gradient
};

// logits[n, V] = h_c Wᵀ (+ b): the composed path's matmul, then add_bias.
template <class T>
void chunk_logits(const Work<T>& k, const T* h_c, int64_t n) {
  kernels::GemmSpec s;
  s.trans_b = true;
  s.m = n, s.n = k.d.vocab, s.k = k.d.dim;
  s.lda = k.d.dim, s.ldb = k.d.dim, s.ldc = k.d.vocab;
  kern::gemm(s, h_c, k.w, k.logits);
  if (!k.b) return;
  for (int64_t r = 0; r < n; ++r) {
    T* row = k.logits + r * k.d.vocab;
    for (int64_t v = 0; v < k.d.vocab; ++v) row[v] += k.b[v];
  }
}

// From the chunk's gradient G [n, V] (in k.logits): dh_c = G W, dW (+)= Gᵀ h_c, db += Σ_rows G.
template <class T>
void chunk_gradients(const Work<T>& k, const T* h_c, int64_t n, bool first, T* dh_c, T* dw, T* db) {
  const int64_t E = k.d.dim, V = k.d.vocab;
  kernels::GemmSpec s;
  s.m = n, s.n = E, s.k = V;
  s.lda = V, s.ldb = E, s.ldc = E;
  kern::gemm(s, k.logits, k.w, dh_c);
  kernels::GemmSpec t;
  t.trans_a = true;
  t.m = V, t.n = E, t.k = n;
  t.lda = V, t.ldb = E, t.ldc = E;
  t.beta = first ? 0.0 : 1.0;  // the chunks add up in a fixed order
  kern::gemm(t, k.logits, h_c, dw);
  if (!db) return;
  kern::sum_cols(k.logits, k.bias_sum, n, V);
  for (int64_t v = 0; v < V; ++v) db[v] += k.bias_sum[v];
}

template <class T>
void run_chunks(const Work<T>& k, int64_t chunk, LinearCrossEntropyResult& r) {
  const int64_t E = k.d.dim;
  T* dh = r.dhidden.defined() ? r.dhidden.data<T>() : nullptr;
  T* dw = r.dweight.defined() ? r.dweight.data<T>() : nullptr;
  T* db = r.dbias.defined() ? r.dbias.data<T>() : nullptr;
  for (int64_t c0 = 0; c0 < k.counted; c0 += chunk) {
    const int64_t n = std::min(chunk, k.counted - c0);
    const int64_t* rows = k.kept + c0;
    const bool in_place = rows[n - 1] - rows[0] == n - 1;
    const T* h_c = k.h + rows[0] * E;
    if (!in_place) {
      for (int64_t i = 0; i < n; ++i) std::copy_n(k.h + rows[i] * E, E, k.h_rows + i * E);
      h_c = k.h_rows;
    }
    chunk_logits(k, h_c, n);
    kernels::CrossEntropySpec spec = k.spec;
    spec.rows = n;
    kern::cross_entropy_forward(k.logits, k.ids + c0, k.chunk_loss, k.lse, spec);
    for (int64_t i = 0; i < n; ++i) k.row_loss[rows[i]] = k.chunk_loss[i];
    if (!dh) continue;
    // G over the logits, which nothing reads again (cross_entropy.h: same bits).
    kern::cross_entropy_backward(k.logits, k.ids + c0, k.lse, k.row_scale, k.logits, spec);
    T* dh_c = in_place ? dh + rows[0] * E : k.dh_rows;
    chunk_gradients(k, h_c, n, c0 == 0, dh_c, dw, db);
    if (!in_place)
      for (int64_t i = 0; i < n; ++i) std::copy_n(k.dh_rows + i * E, E, dh + rows[i] * E);
  }
}

}  // namespace

int64_t linear_cross_entropy_chunk_rows(int64_t vocab) {
  constexpr int64_t kChunkFloats = int64_t{1} << 22;
  constexpr int64_t kRowMultiple = 256;
  const int64_t rows = std::max<int64_t>(1, kChunkFloats / std::max<int64_t>(1, vocab));
  return rows < kRowMultiple ? rows : rows / kRowMultiple * kRowMultiple;
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
  std::vector<int64_t> kept;
  std::vector<int32_t> kept_ids;
  for (int64_t i = 0; i < d.rows; ++i) {
    if (ids[size_t(i)] == options.loss.ignore_index) continue;
    kept.push_back(i);
    kept_ids.push_back(ids[size_t(i)]);
  }
  r.counted_rows = int64_t(kept.size());
  const bool grads = options.want_gradients;
  if (grads) {
    // Ignored rows are never computed: their gradient is 0 (a pad row's hidden state,
    // whatever it holds, never reaches dW).
    r.dhidden = Tensor::zeros(hidden.shape(), dt);
    // No counted row: no chunk writes dW.
    r.dweight =
        r.counted_rows == 0 ? Tensor::zeros(weight.shape(), dt) : Tensor::empty(weight.shape(), dt);
    if (bias) r.dbias = Tensor::zeros(bias->shape(), dt);
  }
  const detail::ContiguousInput ch(hidden), cw(weight);
  const std::optional<detail::ContiguousInput> cb =
      bias ? std::optional<detail::ContiguousInput>(std::in_place, *bias) : std::nullopt;
  Tensor row_loss = Tensor::zeros({d.rows}, dt);
  Tensor chunk_loss = Tensor::empty({chunk}, dt), lse = Tensor::empty({chunk}, dt);
  Tensor logits = Tensor::empty({chunk, d.vocab}, dt);
  // d(loss)/d(loss_r) = 1 / counted for every counted row.
  const double per_row = r.counted_rows == 0 ? 0.0 : 1.0 / double(r.counted_rows);
  Tensor row_scale = Tensor::full({chunk}, per_row, dt);
  Tensor bias_sum = grads && bias ? Tensor::empty({d.vocab}, dt) : Tensor();
  // Gather buffers only when some row is ignored (otherwise every chunk is read in place).
  const bool gathers = r.counted_rows < d.rows;
  Tensor h_rows = gathers ? Tensor::empty({chunk, d.dim}, dt) : Tensor();
  Tensor dh_rows = gathers && grads ? Tensor::empty({chunk, d.dim}, dt) : Tensor();
  detail::visit_dtype(dt, [&]<class T>() {
    auto ptr = [](Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    const Work<T> k{d,
                    ch.data<T>(),
                    cw.data<T>(),
                    cb ? cb->data<T>() : nullptr,
                    kept.data(),
                    r.counted_rows,
                    kept_ids.data(),
                    {0, d.vocab, options.loss.label_smoothing, int32_t(options.loss.ignore_index)},
                    row_loss.data<T>(),
                    chunk_loss.data<T>(),
                    lse.data<T>(),
                    logits.data<T>(),
                    row_scale.data<T>(),
                    ptr(bias_sum),
                    ptr(h_rows),
                    ptr(dh_rows)};
    run_chunks(k, chunk, r);
    // Ignored rows hold 0, so summing all rows equals summing the counted ones.
    const double total = double(kern::sum(row_loss.data<T>(), d.rows));
    *r.loss.data<T>() = r.counted_rows == 0 ? T(0) : T(total / double(r.counted_rows));
  });
  return r;
}

}  // namespace qkv::ops
