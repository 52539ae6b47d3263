// Private: how a differentiable function puts itself on the tape.
#pragma once

#include <functional>
#include <initializer_list>
#include <span>

#include "qkv/autograd/registry.h"
#include "qkv/autograd/variable.h"
#include "qkv/ops/grad_target.h"

namespace qkv::autograd::detail {

// Called with the output's gradient dy; accumulates into the inputs (via accumulate()).
// dy is an rvalue: when the output does not keep its gradient (an intermediate), the
// tape hands it over, so a function that passes it on unchanged (reshape, the x of
// add_bias, one side of add) can move it into an input's gradient instead of copying.
// A function taking `const Tensor&` works as well.
using BackwardFn = std::function<void(Tensor&& dy)>;

// Wraps `value` as the op's output. When grad mode is on and any input requires grad, the
// output requires grad and an entry (op name, backward) is appended to the tape.
Variable record(const OpRegistration& op, Tensor value, std::span<const Variable> inputs,
                BackwardFn backward);
inline Variable record(const OpRegistration& op, Tensor value,
                       std::initializer_list<Variable> inputs, BackwardFn backward) {
  return record(op, std::move(value), std::span<const Variable>(inputs.begin(), inputs.size()),
                std::move(backward));
}

// input.grad += g when the input requires grad (constants are skipped).
inline void accumulate(const Variable& input, const TensorView& g) {
  if (input.requires_grad()) input.accumulate_grad(g);
}
// The same for a gradient the caller no longer needs: the input adopts it when it is the
// first gradient and nothing else shares its storage (Variable::accumulate_grad(Tensor&&)).
inline void accumulate(const Variable& input, Tensor&& g) {
  if (input.requires_grad()) input.accumulate_grad(std::move(g));
}

// Where a backward function writes one input's gradient (a kernel or product that can add
// into its destination): the gradient the input already has, added to in place -- what
// accumulate() would do with an extra temporary and an extra pass -- or a fresh tensor
// that fill() hands over. Undefined when the input needs no gradient (a constant): the
// backward skips that computation. Take the slot, write it, fill() it, and only then take
// the next input's slot (both may be the same variable).
inline ops::GradTarget grad_slot(const Variable& input) {
  if (!input.requires_grad()) return {};
  if (input.grad().defined()) return {input.grad(), true};
  const Tensor& v = input.value();
  return {Tensor::empty(v.shape(), v.dtype()), false};
}
inline void fill(const Variable& input, ops::GradTarget&& slot) {
  if (slot.grad.defined() && !slot.add) input.accumulate_grad(std::move(slot.grad));
}

// Anchors, one per function file, referenced by registered_ops() so a static link keeps
// every file (and thereby its OpRegistration objects).
void link_linear_functions();
void link_nn_functions();
void link_recurrent_functions();
void link_sequence_functions();

}  // namespace qkv::autograd::detail
