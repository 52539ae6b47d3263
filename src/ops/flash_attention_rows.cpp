#include "qkv/ops/flash_attention_rows.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "detail/checks.h"
#include "detail/kernel_select.h"
#include "qkv/kernels/flash_attention.h"

namespace qkv::ops {
namespace {

// Σ lengths, each checked >= 0 (ValueError naming the field and entry).
int64_t total_rows(std::string_view op, std::string_view field, std::span<const int64_t> lengths) {
  int64_t n = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    QKV_CHECK(lengths[b] >= 0, ValueError, op, ": rows.", field, "[", b, "] = ", lengths[b],
              " is negative");
    n += lengths[b];
  }
  return n;
}

void check_operand(std::string_view op, std::string_view name, const TensorView& t, int64_t rows,
                   int64_t column, int64_t width, std::string_view lengths) {
  QKV_CHECK(t.rank() == 2, ShapeError, op, ": ", name, " ", describe(t),
            " is not packed rows [N, C]");
  QKV_CHECK(t.dim(0) == rows, ShapeError, op, ": ", name, " ", describe(t), " has ", t.dim(0),
            " rows, rows.", lengths, " sum to ", rows);
  QKV_CHECK(column >= 0 && column + width <= t.dim(1), ShapeError, op, ": ", name, " ", describe(t),
            " has no columns [", column, ", ", column + width, ") for its heads (rows.", name,
            "_column, heads x head_dim)");
}

// The kernel's spec of packed rows and what it points to (kept alive here).
class RowsSpec {
 public:
  RowsSpec(std::string_view op, const TensorView& q, const TensorView& k, const TensorView& v,
           const FlashRows& r, const FlashAttentionOptions& o) {
    QKV_CHECK(r.heads >= 1 && r.head_dim >= 1, ValueError, op, ": rows.heads ", r.heads,
              " and rows.head_dim ", r.head_dim, " must be >= 1");
    QKV_CHECK(!r.query_lengths.empty() && r.query_lengths.size() == r.key_lengths.size(),
              ShapeError, op, ": rows.query_lengths (", r.query_lengths.size(),
              ") and rows.key_lengths (", r.key_lengths.size(), ") must name the same B >= 1");
    QKV_CHECK(o.key_lengths.empty() && o.key_rows.empty(), ValueError, op,
              ": options.key_lengths and options.key_rows do not apply to packed rows "
              "(rows.key_lengths mask the keys)");
    QKV_CHECK(std::isfinite(o.scale), ValueError, op, ": scale ", o.scale, " is not finite");
    QKV_CHECK(o.keep_probs_up_to_bytes >= 0, ValueError, op, ": keep_probs_up_to_bytes ",
              o.keep_probs_up_to_bytes, " is negative");
    detail::check_same_dtype(op, q, k);
    detail::check_same_dtype(op, q, v);
    const int64_t width = r.heads * r.head_dim;
    const int64_t nq = total_rows(op, "query_lengths", r.query_lengths);
    const int64_t nk = total_rows(op, "key_lengths", r.key_lengths);
    check_operand(op, "q", q, nq, r.q_column, width, "query_lengths");
    check_operand(op, "k", k, nk, r.k_column, width, "key_lengths");
    check_operand(op, "v", v, nk, r.v_column, width, "key_lengths");
    detail::check_not_empty(op, "q", q);
    detail::check_not_empty(op, "k", k);
    if (o.causal)
      for (size_t b = 0; b < r.query_lengths.size(); ++b)
        QKV_CHECK(r.query_lengths[b] == r.key_lengths[b], ValueError, op,
                  ": causal needs equal query and key lengths, sequence ", b, " has ",
                  r.query_lengths[b], " and ", r.key_lengths[b]);
    for (size_t b = 0, iq = 0, ik = 0; b < r.query_lengths.size(); ++b) {
      query_starts_.push_back(int64_t(iq));
      key_starts_.push_back(int64_t(ik));
      iq += size_t(r.query_lengths[b]);
      ik += size_t(r.key_lengths[b]);
    }
    rows_ = {r.heads,
             query_starts_.data(),
             r.query_lengths.data(),
             key_starts_.data(),
             r.key_lengths.data(),
             q.dim(1),
             k.dim(1),
             v.dim(1),
             width};
    spec_.bh = int64_t(r.query_lengths.size()) * r.heads;
    spec_.tq = *std::ranges::max_element(r.query_lengths);
    spec_.tk = *std::ranges::max_element(r.key_lengths);
    spec_.dh = spec_.dv = r.head_dim;
    spec_.scale = o.scale;
    spec_.causal = o.causal;
    spec_.rows = &rows_;
  }
  RowsSpec(const RowsSpec&) = delete;
  RowsSpec& operator=(const RowsSpec&) = delete;

  const kernels::FlashAttentionSpec& spec() const noexcept { return spec_; }

 private:
  std::vector<int64_t> query_starts_, key_starts_;
  kernels::FlashAttentionRows rows_;
  kernels::FlashAttentionSpec spec_;
};

void check_target(std::string_view op, std::string_view name, const Tensor& t,
                  const TensorView& like) {
  QKV_CHECK(
      t.defined() && t.shape() == like.shape() && t.dtype() == like.dtype() && t.is_contiguous(),
      ShapeError, op, ": ", name, " ", t.defined() ? describe(t) : std::string("undefined"),
      " is not a contiguous tensor shaped as ", describe(like));
}

}  // namespace

FlashAttentionResult flash_attention_rows(const TensorView& q, const TensorView& k,
                                          const TensorView& v, const FlashRows& rows,
                                          const FlashAttentionOptions& options) {
  const detail::ContiguousInput cq(q), ck(k), cv(v);
  const RowsSpec rs("flash_attention_rows", cq.view(), ck.view(), cv.view(), rows, options);
  const kernels::FlashAttentionSpec& spec = rs.spec();
  FlashAttentionResult r{Tensor::empty(Shape{q.dim(0), rows.heads * rows.head_dim}, q.dtype()),
                         Tensor::empty(Shape{spec.bh, spec.tq}, q.dtype())};
  const int64_t kept =
      flash_attention_kept_bytes(spec.bh, spec.tq, spec.tk, options.keep_probs_up_to_bytes);
  if (q.dtype() == DType::F32 && kept > 0)
    r.probs = Tensor::empty(Shape{kept / int64_t(sizeof(float))}, DType::F32);
  detail::visit_dtype(q.dtype(), [&]<class T>() {
    const T* iq = cq.data<T>() + rows.q_column;  // the heads' first columns
    const T* ik = ck.data<T>() + rows.k_column;
    const T* iv = cv.data<T>() + rows.v_column;
    if constexpr (std::is_same_v<T, float>)
      kernels::flash_attention_forward(spec, iq, ik, iv, r.out.data<T>(), r.lse.data<T>(),
                                       r.probs.defined() ? r.probs.data<float>() : nullptr);
    else
      kernels::ref::flash_attention_forward(spec, iq, ik, iv, r.out.data<T>(), r.lse.data<T>());
  });
  return r;
}

void flash_attention_rows_backward(const TensorView& dout, const TensorView& q, const TensorView& k,
                                   const TensorView& v, const TensorView& out,
                                   const TensorView& lse, const FlashRows& rows,
                                   const FlashAttentionOptions& options, const TensorView& probs,
                                   const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  constexpr std::string_view op = "flash_attention_rows_backward";
  const detail::ContiguousInput cq(q), ck(k), cv(v), cdo(dout), co(out), cl(lse);
  const RowsSpec rs(op, cq.view(), ck.view(), cv.view(), rows, options);
  const kernels::FlashAttentionSpec& spec = rs.spec();
  const Shape out_shape{q.dim(0), rows.heads * rows.head_dim};
  for (auto [name, t] : {std::pair{"dout", &dout}, {"out", &out}}) {
    detail::check_same_dtype(op, q, *t);
    QKV_CHECK(t->shape() == out_shape, ShapeError, op, ": ", name, " ", describe(*t), " should be ",
              out_shape);
  }
  detail::check_same_dtype(op, q, lse);
  QKV_CHECK(lse.shape() == Shape({spec.bh, spec.tq}), ShapeError, op, ": lse ", describe(lse),
            " should be ", Shape({spec.bh, spec.tq}));
  check_target(op, "dq", dq, q);
  check_target(op, "dk", dk, k);
  check_target(op, "dv", dv, v);
  const bool kept = probs.raw_data() != nullptr;
  if (kept) {
    const int64_t size = kernels::flash_attention_probs_size(spec);
    QKV_CHECK(q.dtype() == DType::F32 && probs.dtype() == DType::F32 && probs.rank() == 1 &&
                  probs.dim(0) == size,
              ShapeError, op, ": probs ", describe(probs),
              " is not what flash_attention_rows keeps for these inputs (F32 [", size, "])");
  }
  detail::visit_dtype(q.dtype(), [&]<class T>() {
    // The gradients' head columns start where the inputs' do.
    T* gq = dq.data<T>() + rows.q_column;
    T* gk = dk.data<T>() + rows.k_column;
    T* gv = dv.data<T>() + rows.v_column;
    const T* iq = cq.data<T>() + rows.q_column;
    const T* ik = ck.data<T>() + rows.k_column;
    const T* iv = cv.data<T>() + rows.v_column;
    if constexpr (std::is_same_v<T, float>) {
      Tensor delta = Tensor::empty(Shape{spec.bh, spec.tq}, q.dtype());  // scratch
      std::optional<detail::ContiguousInput> cp;
      if (kept) cp.emplace(probs);
      kernels::flash_attention_backward(spec, iq, ik, iv, co.data<T>(), cl.data<T>(), cdo.data<T>(),
                                        delta.data<T>(), gq, gk, gv,
                                        cp ? cp->data<float>() : nullptr);
    } else {  // the reference recomputes lse and delta itself
      kernels::ref::flash_attention_backward(spec, iq, ik, iv, cdo.data<T>(), gq, gk, gv);
    }
  });
}

}  // namespace qkv::ops
