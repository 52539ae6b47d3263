// Rows of the op table (op_cases.h) for the recurrent cells, the masked blend and the
// sequence ops: the strided and precision tests run them like every other op.
#include "op_cases.h"
#include "qkv/ops/recurrent.h"
#include "qkv/ops/sequence.h"

namespace qkv::testing {
namespace {

using Views = std::vector<TensorView>;
using Outputs = std::vector<Tensor>;

Tensor owned(const TensorView& v) {
  Tensor t = Tensor::empty(v.shape(), v.dtype());
  copy_into(v, t);
  return t;
}

// Rows 0, 2, 5 of six kept; an F64 mask for inputs of either dtype (the mask is converted).
Tensor blend_mask() {
  return Tensor::from(Shape{2, 3}, std::vector<double>{1, 0, 1, 0, 0, 1});
}

}  // namespace

void append_recurrent_cases(std::vector<OpCase>& cases) {
  cases.push_back({"gru_cell", {{{3, 15}}, {{3, 15}}, {{3, 5}}, {{3, 5}}}, [](const Views& in) {
                     ops::GruCellResult r = ops::gru_cell(in[0], in[1], in[2]);
                     ops::GruCellGrads g = ops::gru_cell_backward(in[3], in[1], in[2], r.gates);
                     return Outputs{r.h, r.gates, g.dgx, g.dgh, g.dh};
                   }});
  cases.push_back(
      {"lstm_cell", {{{3, 20}}, {{3, 20}}, {{3, 5}}, {{3, 5}}, {{3, 5}}}, [](const Views& in) {
         ops::LstmCellResult r = ops::lstm_cell(in[0], in[1], in[2]);
         ops::LstmCellGrads g = ops::lstm_cell_backward(in[3], in[4], in[2], r.c, r.gates);
         return Outputs{r.h, r.c, r.gates, g.dgates, g.dc};
       }});
  cases.push_back({"masked_blend", {{{2, 3, 7}}, {{2, 3, 7}}, {{2, 3, 7}}}, [](const Views& in) {
                     const ops::BinaryGrads g = ops::masked_blend_backward(in[2], blend_mask());
                     return Outputs{ops::masked_blend(in[0], in[1], blend_mask()), g.da, g.db};
                   }});
  cases.push_back(
      {"concat", {{{2, 3, 4}}, {{2, 1, 4}}, {{2, 5, 4}}, {{2, 9, 4}}}, [](const Views& in) {
         const std::vector<int64_t> sizes{3, 1, 5};
         Outputs out{ops::concat(std::vector<TensorView>{in[0], in[1], in[2]}, 1)};
         for (const Tensor& g : ops::concat_backward(owned(in[3]), sizes, 1))
           out.push_back(g.contiguous());
         return out;
       }});
  cases.push_back({"concat_last", {{{3, 2}}, {{3, 5}}, {{3, 7}}}, [](const Views& in) {
                     const std::vector<int64_t> sizes{2, 5};
                     Outputs out{ops::concat(std::vector<TensorView>{in[0], in[1]}, -1)};
                     for (const Tensor& g : ops::concat_backward(owned(in[2]), sizes, -1))
                       out.push_back(g.contiguous());
                     return out;
                   }});
  cases.push_back({"stack", {{{3, 4}}, {{3, 4}}, {{3, 4}}, {{3, 3, 4}}}, [](const Views& in) {
                     Outputs out{ops::stack(std::vector<TensorView>{in[0], in[1], in[2]}, 1)};
                     for (const Tensor& g : ops::stack_backward(owned(in[3]), 1)) out.push_back(g);
                     return out;
                   }});
  cases.push_back({"select", {{{3, 5, 4}}, {{3, 4}}, {{3, 5, 4}}}, [](const Views& in) {
                     Tensor acc = owned(in[2]);
                     ops::accumulate_select_into(acc, 1, 2, in[1]);
                     return Outputs{ops::select(owned(in[0]), 1, 2),
                                    ops::select_backward(in[1], in[0].shape(), 1, 2), acc};
                   }});
  cases.push_back(
      {"gather_scatter_rows", {{{6, 4}}, {{3, 4}}}, [](const Views& in) {
         const std::vector<int64_t> rows{0, 1, 3};
         return Outputs{ops::gather_rows(in[0], rows), ops::scatter_rows(in[1], rows, 6)};
       }});
}

}  // namespace qkv::testing
