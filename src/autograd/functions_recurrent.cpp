// Differentiable GRU / LSTM cells (fused kernels underneath) and the masked blend.
#include "qkv/autograd/functions_recurrent.h"

#include <utility>

#include "detail/record.h"
#include "qkv/ops/recurrent.h"
#include "qkv/ops/sequence.h"

namespace qkv::autograd {
namespace {

const OpRegistration kGruCell("gru_cell");
const OpRegistration kLstmCell("lstm_cell");
const OpRegistration kMaskedBlend("masked_blend");

}  // namespace

namespace detail {
void link_recurrent_functions() {}
}  // namespace detail

using detail::accumulate;

Variable gru_cell(const Variable& gx, const Variable& gh, const Variable& h) {
  ops::GruCellResult r = ops::gru_cell(gx.value(), gh.value(), h.value());
  return detail::record(kGruCell, r.h, {gx, gh, h}, [gx, gh, h, gates = r.gates](const Tensor& dy) {
    ops::GruCellGrads g = ops::gru_cell_backward(dy, gh.value(), h.value(), gates);
    accumulate(gx, std::move(g.dgx));
    accumulate(gh, std::move(g.dgh));
    accumulate(h, std::move(g.dh));
  });
}

LstmCellOutput lstm_cell(const Variable& gx, const Variable& gh, const Variable& c) {
  ops::LstmCellResult r = ops::lstm_cell(gx.value(), gh.value(), c.value());
  // The tape records one output per entry: h' and c' travel together as hc [2, B, H] and
  // are handed out through select (whose backward fills hc's gradient in place).
  const std::vector<TensorView> parts{r.h, r.c};
  Tensor hc = ops::stack(parts, 0);
  const Variable both = detail::record(
      kLstmCell, hc, {gx, gh, c}, [gx, gh, c, hc, gates = r.gates](const Tensor& dy) {
        ops::LstmCellGrads g = ops::lstm_cell_backward(ops::select(dy, 0, 0), ops::select(dy, 0, 1),
                                                       c.value(), ops::select(hc, 0, 1), gates);
        accumulate(gx, g.dgates);  // a copy: g.dgates goes to gh as well
        accumulate(gh, std::move(g.dgates));
        accumulate(c, std::move(g.dc));
      });
  return {select(both, 0, 0), select(both, 0, 1)};
}

Variable masked_blend(const Variable& a, const Variable& b, const Tensor& mask) {
  return detail::record(kMaskedBlend, ops::masked_blend(a.value(), b.value(), mask), {a, b},
                        [a, b, mask](const Tensor& dy) {
                          ops::BinaryGrads g = ops::masked_blend_backward(dy, mask);
                          accumulate(a, std::move(g.da));
                          accumulate(b, std::move(g.db));
                        });
}

}  // namespace qkv::autograd
