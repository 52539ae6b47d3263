#include "qkv/ops/flash_attention.h"

#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "detail/checks.h"
#include "detail/kernel_select.h"
#include "qkv/kernels/flash_attention.h"

namespace qkv::ops {
namespace {

// Batch and head counts of a [B, H, T, D] or [B, T, D] tensor.
struct Heads {
  int64_t batch = 0, heads = 1;
};

Heads heads_of(const TensorView& t) {
  return {t.dim(0), t.rank() == 4 ? t.dim(1) : 1};
}

void check_rank(std::string_view op, std::string_view name, const TensorView& t) {
  QKV_CHECK(t.rank() == 3 || t.rank() == 4, ShapeError, op, ": ", name, " ", describe(t),
            " is neither [B, H, T, D] nor [B, T, D]");
  detail::check_not_empty(op, name, t);
}

// Validates q, k, v and the options; returns the kernel spec (key_lengths not set).
kernels::FlashAttentionSpec check_inputs(std::string_view op, const TensorView& q,
                                         const TensorView& k, const TensorView& v,
                                         const FlashAttentionOptions& o) {
  check_rank(op, "q", q);
  check_rank(op, "k", k);
  check_rank(op, "v", v);
  detail::check_same_dtype(op, q, k);
  detail::check_same_dtype(op, q, v);
  const int r = q.rank();
  // With key_rows, k and v may hold another number of rows than q (checked below).
  const bool rows_match =
      o.key_rows.empty() ? k.dim(0) == q.dim(0) && v.dim(0) == q.dim(0) : v.dim(0) == k.dim(0);
  const bool lead = k.rank() == r && v.rank() == r && rows_match &&
                    (r == 3 || (k.dim(1) == q.dim(1) && v.dim(1) == q.dim(1)));
  QKV_CHECK(lead && k.dim(-1) == q.dim(-1) && v.dim(-2) == k.dim(-2), ShapeError, op,
            ": expected q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv] with equal leading "
            "dims, got q ",
            describe(q), ", k ", describe(k), ", v ", describe(v));
  if (!o.key_rows.empty()) {
    QKV_CHECK(int64_t(o.key_rows.size()) == q.dim(0), ShapeError, op, ": ", o.key_rows.size(),
              " key rows for batch ", q.dim(0), " of q ", describe(q));
    for (size_t b = 0; b < o.key_rows.size(); ++b)
      QKV_CHECK(o.key_rows[b] >= 0 && o.key_rows[b] < k.dim(0), IndexError, op, ": key_rows[", b,
                "] = ", o.key_rows[b], " outside the ", k.dim(0), " rows of k ", describe(k));
  }
  QKV_CHECK(std::isfinite(o.scale), ValueError, op, ": scale ", o.scale, " is not finite");
  const Heads h = heads_of(q);
  const int64_t tk = k.dim(-2);
  if (!o.key_lengths.empty()) {
    QKV_CHECK(int64_t(o.key_lengths.size()) == h.batch, ShapeError, op, ": ", o.key_lengths.size(),
              " key lengths for batch ", h.batch, " of q ", describe(q));
    for (size_t b = 0; b < o.key_lengths.size(); ++b)
      QKV_CHECK(o.key_lengths[b] >= 0 && o.key_lengths[b] <= tk, ValueError, op, ": key length ",
                o.key_lengths[b], " at batch ", b, " outside [0, ", tk, "]");
  }
  return {h.batch * h.heads, q.dim(-2), tk, q.dim(-1), v.dim(-1), o.scale, o.causal, nullptr, 0, 0};
}

// key_rows [B] expanded to the kernel's head of k and v for each (b, h) [B·H]; empty when
// there are none.
std::vector<int64_t> per_head_key_rows(const TensorView& q, const FlashAttentionOptions& o) {
  std::vector<int64_t> out;
  const Heads h = heads_of(q);
  for (size_t b = 0; b < o.key_rows.size(); ++b)
    for (int64_t head = 0; head < h.heads; ++head) out.push_back(o.key_rows[b] * h.heads + head);
  return out;
}

// key_lengths [B] expanded to one per (b, h): the kernel's per-head lengths [B·H].
std::vector<int64_t> per_head_lengths(const TensorView& q, const FlashAttentionOptions& o) {
  std::vector<int64_t> out;
  if (o.key_lengths.empty()) return out;
  const Heads h = heads_of(q);
  for (int64_t b = 0; b < h.batch; ++b) out.insert(out.end(), size_t(h.heads), o.key_lengths[b]);
  return out;
}

void check_like(std::string_view op, std::string_view name, const TensorView& t,
                const TensorView& like, const Shape& expected) {
  detail::check_same_dtype(op, like, t);
  QKV_CHECK(t.shape() == expected, ShapeError, op, ": ", name, " ", describe(t), " should be ",
            expected);
}

// k or v as the kernel reads it: the view itself when each head's [T, D] rows are dense
// and the heads equally spaced (a cache [B, H, capacity, D] sliced along T), else a dense
// copy. head_stride: elements from one head to the next (0 when the heads are back to back,
// the kernel's default).
class HeadRowsInput {
 public:
  explicit HeadRowsInput(const TensorView& t) {
    if (const std::optional<int64_t> stride = head_stride(t)) {
      view_ = t;
      head_stride_ = *stride;
    } else {
      contiguous_.emplace(t);
      view_ = contiguous_->view();
    }
  }
  template <class T>
  const T* data() const {
    return view_.data<T>();
  }
  int64_t head_stride() const noexcept { return head_stride_; }

 private:
  // The spacing of the heads of t [B, H, T, D] or [B, T, D] whose rows are dense, if one
  // spacing covers them all (a unit dim's stride does not matter); none otherwise.
  static std::optional<int64_t> head_stride(const TensorView& t) {
    if (t.raw_data() == nullptr || t.is_contiguous()) return std::nullopt;
    const int r = t.rank();
    const int64_t rows = t.dim(r - 2), d = t.dim(r - 1);
    if ((d > 1 && t.stride(r - 1) != 1) || (rows > 1 && t.stride(r - 2) != d)) return std::nullopt;
    // Leading dims, outermost first: (size, stride) of those with more than one entry.
    std::vector<std::pair<int64_t, int64_t>> lead;
    for (int i = 0; i < r - 2; ++i)
      if (t.dim(i) > 1) lead.emplace_back(t.dim(i), t.stride(i));
    if (lead.empty()) return rows * d;  // one head: any spacing
    for (size_t i = 0; i + 1 < lead.size(); ++i)
      if (lead[i].second != lead[i + 1].first * lead[i + 1].second) return std::nullopt;
    const int64_t stride = lead.back().second;
    if (stride < rows * d) return std::nullopt;  // heads would overlap
    return stride;
  }

  std::optional<detail::ContiguousInput> contiguous_;
  TensorView view_;
  int64_t head_stride_ = 0;
};

Shape lse_shape(const TensorView& q) {
  return q.shape().without_dim(-1);
}

}  // namespace

int64_t flash_attention_kept_bytes(int64_t bh, int64_t tq, int64_t tk, int64_t budget) {
  if (bh <= 0 || tq <= 0 || tk <= 0 || budget <= 0) return 0;
  kernels::FlashAttentionSpec spec{};
  spec.bh = bh, spec.tq = tq, spec.tk = tk;
  const int64_t floats = kernels::flash_attention_probs_size(spec);
  return floats <= budget / int64_t(sizeof(float)) ? floats * int64_t(sizeof(float)) : 0;
}

FlashAttentionResult flash_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                     const FlashAttentionOptions& options) {
  kernels::FlashAttentionSpec spec = check_inputs("flash_attention", q, k, v, options);
  const std::vector<int64_t> lengths = per_head_lengths(q, options);
  spec.key_lengths = lengths.empty() ? nullptr : lengths.data();
  const std::vector<int64_t> key_heads = per_head_key_rows(q, options);
  spec.kv_heads = key_heads.empty() ? nullptr : key_heads.data();
  const detail::ContiguousInput cq(q);
  const HeadRowsInput ck(k), cv(v);  // a decoder's cache is read in place
  spec.k_head_stride = ck.head_stride();
  spec.v_head_stride = cv.head_stride();
  FlashAttentionResult r{Tensor::empty(q.shape().with_dim(-1, spec.dv), q.dtype()),
                         Tensor::empty(lse_shape(q), q.dtype())};
  QKV_CHECK(options.keep_probs_up_to_bytes >= 0, ValueError, "flash_attention",
            ": keep_probs_up_to_bytes ", options.keep_probs_up_to_bytes, " is negative");
  const int64_t kept =
      flash_attention_kept_bytes(spec.bh, spec.tq, spec.tk, options.keep_probs_up_to_bytes);
  if (q.dtype() == DType::F32 && kept > 0)
    r.probs = Tensor::empty(Shape{kept / int64_t(sizeof(float))}, DType::F32);
  detail::visit_dtype(q.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float>)
      kernels::flash_attention_forward(spec, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                       r.out.data<T>(), r.lse.data<T>(),
                                       r.probs.defined() ? r.probs.data<float>() : nullptr);
    else
      kernels::ref::flash_attention_forward(spec, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                            r.out.data<T>(), r.lse.data<T>());
  });
  return r;
}

FlashAttentionGradients flash_attention_backward(const TensorView& dout, const TensorView& q,
                                                 const TensorView& k, const TensorView& v,
                                                 const TensorView& out, const TensorView& lse,
                                                 const FlashAttentionOptions& options,
                                                 const TensorView& probs) {
  constexpr std::string_view op = "flash_attention_backward";
  QKV_CHECK(options.key_rows.empty(), ValueError, op,
            ": key_rows is forward-only (the gradient of a shared key row would need its "
            "readers summed); gather the rows instead");
  kernels::FlashAttentionSpec spec = check_inputs(op, q, k, v, options);
  const Shape out_shape = q.shape().with_dim(-1, spec.dv);
  check_like(op, "dout", dout, q, out_shape);
  check_like(op, "out", out, q, out_shape);
  check_like(op, "lse", lse, q, lse_shape(q));
  const bool kept = probs.raw_data() != nullptr;
  if (kept) {
    const int64_t size = kernels::flash_attention_probs_size(spec);
    QKV_CHECK(q.dtype() == DType::F32 && probs.dtype() == DType::F32 && probs.rank() == 1 &&
                  probs.dim(0) == size && size > 0,
              ShapeError, op, ": probs ", describe(probs),
              " is not what flash_attention keeps for these inputs (F32 [", size, "])");
  }
  const std::vector<int64_t> lengths = per_head_lengths(q, options);
  spec.key_lengths = lengths.empty() ? nullptr : lengths.data();
  const detail::ContiguousInput cq(q), ck(k), cv(v), cdo(dout), co(out), cl(lse);
  FlashAttentionGradients g{Tensor::empty(q.shape(), q.dtype()),
                            Tensor::empty(k.shape(), q.dtype()),
                            Tensor::empty(v.shape(), q.dtype())};
  detail::visit_dtype(q.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float>) {
      Tensor delta = Tensor::empty(lse_shape(q), q.dtype());  // [..., Tq] scratch
      std::optional<detail::ContiguousInput> cp;
      if (kept) cp.emplace(probs);
      kernels::flash_attention_backward(spec, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                        co.data<T>(), cl.data<T>(), cdo.data<T>(), delta.data<T>(),
                                        g.dq.data<T>(), g.dk.data<T>(), g.dv.data<T>(),
                                        cp ? cp->data<float>() : nullptr);
    } else {  // the reference recomputes lse and delta itself
      kernels::ref::flash_attention_backward(spec, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                             cdo.data<T>(), g.dq.data<T>(), g.dk.data<T>(),
                                             g.dv.data<T>());
    }
  });
  return g;
}

Tensor flash_attention_weights(const TensorView& q, const TensorView& k, const TensorView& lse,
                               const FlashAttentionOptions& options, RowRange rows) {
  constexpr std::string_view op = "flash_attention_weights";
  // k stands in for v: only q and k are read.
  kernels::FlashAttentionSpec spec = check_inputs(op, q, k, k, options);
  check_like(op, "lse", lse, q, lse_shape(q));
  const std::vector<int64_t> lengths = per_head_lengths(q, options);
  spec.key_lengths = lengths.empty() ? nullptr : lengths.data();
  const std::vector<int64_t> key_heads = per_head_key_rows(q, options);
  spec.kv_heads = key_heads.empty() ? nullptr : key_heads.data();
  const int64_t end = rows.end < 0 ? spec.tq : rows.end;
  QKV_CHECK(rows.begin >= 0 && rows.begin <= end && end <= spec.tq, ValueError, op, ": rows [",
            rows.begin, ", ", rows.end, ") outside the ", spec.tq, " query rows");
  const detail::ContiguousInput cq(q), ck(k), cl(lse);
  Tensor p =
      Tensor::empty(q.shape().with_dim(-2, end - rows.begin).with_dim(-1, spec.tk), q.dtype());
  if (p.numel() == 0) return p;
  detail::visit_dtype(q.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float>)
      kernels::flash_attention_weights(spec, cq.data<T>(), ck.data<T>(), cl.data<T>(), rows.begin,
                                       end, p.data<T>());
    else
      kernels::ref::flash_attention_weights(spec, cq.data<T>(), ck.data<T>(), cl.data<T>(),
                                            rows.begin, end, p.data<T>());
  });
  return p;
}

}  // namespace qkv::ops
