#include "qkv/ops/recurrent.h"

#include <string_view>

#include "detail/checks.h"
#include "detail/kernel_select_recurrent.h"

namespace qkv::ops {
namespace {

// ValueError for a default-constructed tensor (no storage), before any shape check
// would describe it as a rank-0 tensor.
void check_defined(std::string_view op, std::string_view name, const TensorView& t) {
  QKV_CHECK(t.raw_data() != nullptr || t.numel() == 0, ValueError, op, ": ", name,
            " is an undefined tensor (no storage)");
}

// state [B, H] and gates [B, G·H] in one dtype; returns the kernel sizes.
kernels::CellSize check_cell(std::string_view op, int64_t gates_per_unit, const TensorView& gx,
                             const TensorView& gh, const TensorView& state,
                             std::string_view state_name) {
  check_defined(op, "gx", gx);
  check_defined(op, "gh", gh);
  check_defined(op, state_name, state);
  detail::check_same_dtype(op, gx, gh);
  detail::check_same_dtype(op, gx, state);
  QKV_CHECK(state.rank() == 2, ShapeError, op, ": ", state_name, " ", describe(state),
            " must be [B, H]");
  const int64_t batch = state.dim(0), hidden = state.dim(1);
  const Shape gate_shape{batch, gates_per_unit * hidden};
  QKV_CHECK(gx.shape() == gate_shape, ShapeError, op, ": gx ", describe(gx), " must be [B, ",
            gates_per_unit, "H] = ", gate_shape, " for ", state_name, " ", describe(state));
  QKV_CHECK(gh.shape() == gate_shape, ShapeError, op, ": gh ", describe(gh), " must be [B, ",
            gates_per_unit, "H] = ", gate_shape, " for ", state_name, " ", describe(state));
  return {batch, hidden};
}

void check_like(std::string_view op, std::string_view name, const TensorView& t,
                const TensorView& like) {
  detail::check_same_dtype(op, t, like);
  QKV_CHECK(t.shape() == like.shape(), ShapeError, op, ": ", name, " ", describe(t),
            " does not match ", describe(like));
}

// The mask as a contiguous tensor in `dtype`, rows of a [..., C]; ValueError unless every
// value is exactly 0 or 1.
Tensor checked_mask(std::string_view op, const TensorView& a, const TensorView& mask) {
  check_defined(op, "mask", mask);
  detail::check_min_rank(op, "a", a, 1);
  QKV_CHECK(mask.shape() == a.shape().without_dim(-1), ShapeError, op, ": mask ", describe(mask),
            " must have the shape of a ", describe(a), " without its last dim");
  const detail::ContiguousInput cm(mask);  // rejects an undefined mask
  Tensor m = Tensor::empty(mask.shape(), a.dtype());
  copy_into(cm.view(), m);
  const Tensor m64 = m.to(DType::F64);
  const double* v = m64.data<double>();
  for (int64_t r = 0; r < m64.numel(); ++r)
    QKV_CHECK(v[r] == 0.0 || v[r] == 1.0, ValueError, op, ": mask value ", v[r], " at row ", r,
              " of ", describe(mask), " is not 0 or 1");
  return m;
}

}  // namespace

GruCellResult gru_cell(const TensorView& gx, const TensorView& gh, const TensorView& h) {
  const kernels::CellSize size = check_cell("gru_cell", 3, gx, gh, h, "h");
  const detail::ContiguousInput cx(gx), cu(gh), ch(h);
  GruCellResult r{Tensor::empty(h.shape(), h.dtype()), Tensor::empty(gx.shape(), h.dtype())};
  detail::visit_dtype(h.dtype(), [&]<class T>() {
    kern::gru_cell_forward(cx.data<T>(), cu.data<T>(), ch.data<T>(), r.h.data<T>(),
                           r.gates.data<T>(), size);
  });
  return r;
}

GruCellGrads gru_cell_backward(const TensorView& dh_new, const TensorView& gh, const TensorView& h,
                               const TensorView& gates) {
  const kernels::CellSize size = check_cell("gru_cell_backward", 3, gates, gh, h, "h");
  check_like("gru_cell_backward", "dh_new", dh_new, h);
  const detail::ContiguousInput cdy(dh_new), cu(gh), ch(h), cg(gates);
  GruCellGrads g{Tensor::empty(gh.shape(), h.dtype()), Tensor::empty(gh.shape(), h.dtype()),
                 Tensor::empty(h.shape(), h.dtype())};
  detail::visit_dtype(h.dtype(), [&]<class T>() {
    kern::gru_cell_backward(cdy.data<T>(), {cu.data<T>(), ch.data<T>(), cg.data<T>()},
                            {g.dgx.data<T>(), g.dgh.data<T>(), g.dh.data<T>()}, size);
  });
  return g;
}

LstmCellResult lstm_cell(const TensorView& gx, const TensorView& gh, const TensorView& c) {
  const kernels::CellSize size = check_cell("lstm_cell", 4, gx, gh, c, "c");
  const detail::ContiguousInput cx(gx), cu(gh), cc(c);
  LstmCellResult r{Tensor::empty(c.shape(), c.dtype()), Tensor::empty(c.shape(), c.dtype()),
                   Tensor::empty(gx.shape(), c.dtype())};
  detail::visit_dtype(c.dtype(), [&]<class T>() {
    kern::lstm_cell_forward(cx.data<T>(), cu.data<T>(), cc.data<T>(),
                            {r.h.data<T>(), r.c.data<T>(), r.gates.data<T>()}, size);
  });
  return r;
}

LstmCellGrads lstm_cell_backward(const TensorView& dh_new, const TensorView& dc_new,
                                 const TensorView& c, const TensorView& c_new,
                                 const TensorView& gates) {
  const kernels::CellSize size = check_cell("lstm_cell_backward", 4, gates, gates, c, "c");
  check_like("lstm_cell_backward", "dh_new", dh_new, c);
  check_like("lstm_cell_backward", "dc_new", dc_new, c);
  check_like("lstm_cell_backward", "c_new", c_new, c);
  const detail::ContiguousInput cdh(dh_new), cdc(dc_new), cc(c), ccn(c_new), cg(gates);
  LstmCellGrads g{Tensor::empty(gates.shape(), c.dtype()), Tensor::empty(c.shape(), c.dtype())};
  detail::visit_dtype(c.dtype(), [&]<class T>() {
    kern::lstm_cell_backward(cdh.data<T>(), cdc.data<T>(),
                             {cc.data<T>(), ccn.data<T>(), cg.data<T>()},
                             {g.dgates.data<T>(), g.dc.data<T>()}, size);
  });
  return g;
}

Tensor masked_blend(const TensorView& a, const TensorView& b, const TensorView& mask) {
  detail::check_same_dtype("masked_blend", a, b);
  detail::check_same_shape("masked_blend", a, b);
  const Tensor m = checked_mask("masked_blend", a, mask);
  const detail::ContiguousInput ca(a), cb(b);
  Tensor y = Tensor::empty(a.shape(), a.dtype());
  const int64_t rows = m.numel(), cols = a.dim(-1);
  detail::visit_dtype(a.dtype(), [&]<class T>() {
    kern::masked_blend_forward(ca.data<T>(), cb.data<T>(), m.data<T>(), y.data<T>(), rows, cols);
  });
  return y;
}

BinaryGrads masked_blend_backward(const TensorView& dy, const TensorView& mask) {
  const Tensor m = checked_mask("masked_blend_backward", dy, mask);
  const detail::ContiguousInput cdy(dy);
  BinaryGrads g{Tensor::empty(dy.shape(), dy.dtype()), Tensor::empty(dy.shape(), dy.dtype())};
  const int64_t rows = m.numel(), cols = dy.dim(-1);
  detail::visit_dtype(dy.dtype(), [&]<class T>() {
    kern::masked_blend_backward(cdy.data<T>(), m.data<T>(), g.da.data<T>(), g.db.data<T>(), rows,
                                cols);
  });
  return g;
}

}  // namespace qkv::ops
