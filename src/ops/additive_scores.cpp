#include "qkv/ops/additive_scores.h"

#include <string_view>
#include <type_traits>

#include "detail/checks.h"
#include "qkv/kernels/additive_attention.h"

namespace qkv::ops {
namespace {

kernels::AdditiveScoreSpec check_inputs(std::string_view op, const TensorView& qp,
                                        const TensorView& kp, const TensorView& v) {
  detail::check_not_empty(op, "qp", qp);
  detail::check_not_empty(op, "kp", kp);
  detail::check_not_empty(op, "v", v);
  detail::check_same_dtype(op, qp, kp);
  detail::check_same_dtype(op, qp, v);
  QKV_CHECK(qp.rank() == 3 && kp.rank() == 3 && v.rank() == 1 && kp.dim(0) == qp.dim(0) &&
                kp.dim(2) == qp.dim(2) && v.dim(0) == qp.dim(2),
            ShapeError, op, ": expected qp [B, Tq, A], kp [B, Tk, A], v [A], got qp ", describe(qp),
            ", kp ", describe(kp), ", v ", describe(v));
  return {qp.dim(0), qp.dim(1), kp.dim(1), qp.dim(2)};
}

}  // namespace

Tensor additive_scores(const TensorView& qp, const TensorView& kp, const TensorView& v) {
  const kernels::AdditiveScoreSpec s = check_inputs("additive_scores", qp, kp, v);
  const detail::ContiguousInput cq(qp), ck(kp), cv(v);
  Tensor scores = Tensor::empty({s.batch, s.tq, s.tk}, qp.dtype());
  detail::visit_dtype(qp.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float>)
      kernels::additive_scores_forward(s, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                       scores.data<T>());
    else
      kernels::ref::additive_scores_forward(s, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                            scores.data<T>());
  });
  return scores;
}

AdditiveScoresGradients additive_scores_backward(const TensorView& dscores, const TensorView& qp,
                                                 const TensorView& kp, const TensorView& v) {
  return additive_scores_backward(dscores, qp, kp, v, GradTarget{});
}

AdditiveScoresGradients additive_scores_backward(const TensorView& dscores, const TensorView& qp,
                                                 const TensorView& kp, const TensorView& v,
                                                 const GradTarget& dkp) {
  constexpr std::string_view op = "additive_scores_backward";
  const kernels::AdditiveScoreSpec s = check_inputs(op, qp, kp, v);
  detail::check_same_dtype(op, qp, dscores);
  QKV_CHECK(dscores.shape() == Shape({s.batch, s.tq, s.tk}), ShapeError, op, ": dscores ",
            describe(dscores), " should be ", Shape({s.batch, s.tq, s.tk}));
  detail::check_grad_target(op, "dkp", dkp, kp);
  const detail::ContiguousInput cd(dscores), cq(qp), ck(kp), cv(v);
  AdditiveScoresGradients g{Tensor::empty(qp.shape(), qp.dtype()),
                            dkp.grad.defined() ? dkp.grad : Tensor::empty(kp.shape(), qp.dtype()),
                            Tensor::empty(v.shape(), qp.dtype())};
  // Per-query partial sums of dv, added in row order (determinism without atomics).
  Tensor dv_rows = Tensor::empty(qp.shape(), qp.dtype());
  detail::visit_dtype(qp.dtype(), [&]<class T>() {
    const kernels::AdditiveScoreGrads<T> grads{g.dqp.data<T>(), g.dkp.data<T>(), g.dv.data<T>(),
                                               dv_rows.data<T>(), dkp.grad.defined() && dkp.add};
    if constexpr (std::is_same_v<T, float>)
      kernels::additive_scores_backward(s, cq.data<T>(), ck.data<T>(), cv.data<T>(), cd.data<T>(),
                                        grads);
    else
      kernels::ref::additive_scores_backward(s, cq.data<T>(), ck.data<T>(), cv.data<T>(),
                                             cd.data<T>(), grads);
  });
  return g;
}

}  // namespace qkv::ops
