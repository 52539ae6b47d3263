// Private: the five score functions, composed from differentiable autograd functions.
#pragma once

#include "qkv/attention/attention.h"

namespace qkv::attention::detail {

// q [B, Tq, Dq], k [B, Tk, Dk] -> scores [B, Tq, Tk] of options.kind (inputs, params and
// options already validated by attend()).
autograd::Variable score(const autograd::Variable& q, const autograd::Variable& k,
                         const ScoreParams& params, const AttentionOptions& options);

// x [B, T, D], w [D, A] -> x w [B, T, A] (one [B·T, D] x [D, A] product).
autograd::Variable project_rows(const autograd::Variable& x, const autograd::Variable& w);

}  // namespace qkv::attention::detail
