// A thin reverse-mode tape over the ops layer.
//
// A Variable is a shared handle to (value, grad, requires_grad). A differentiable
// function (functions.h) computes its value with the ops forward and, when grad mode is
// on and some input requires grad, appends one tape entry: the op's name and a closure
// that calls the ops backward and accumulates into the inputs' grads. The tape only
// records which backward to call; all math lives in ops.
//
// The tape and the grad mode are per thread. backward(loss) runs the entries recorded on
// the calling thread in reverse and then CLEARS the tape: a graph is differentiated once,
// like PyTorch without retain_graph. Gradients of leaves accumulate across backward calls
// until zero_grad(). Memory is released as backward runs, not when it returns: once an
// entry's backward has run, its closure (and the tensors it saved) is destroyed and its
// output's gradient dropped, unless that output asked for retain_grad() (like PyTorch,
// intermediate gradients are not kept by default; a training step of the Transformer
// peaked at 6.6 GiB when they were). A forward run in grad mode that is never
// differentiated keeps its entries (and their saved tensors) until clear_tape() or the
// next backward().
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "qkv/tensor/tensor.h"

namespace qkv::autograd {

class Variable {
 public:
  Variable() = default;  // undefined handle
  explicit Variable(Tensor value, bool requires_grad = false);

  bool defined() const noexcept { return node_ != nullptr; }
  const Tensor& value() const;
  // Shaped like value(); undefined (defined() == false) until a backward reaches it.
  const Tensor& grad() const;
  bool requires_grad() const;
  void set_requires_grad(bool requires_grad) const;
  // Drops the gradient (the next accumulation starts from zero).
  void zero_grad() const;
  // Moves the gradient out (grad() is undefined afterwards; a bound gradient stays and
  // a handle sharing it is returned): the tape hands an intermediate's gradient to its
  // backward function this way.
  Tensor take_grad() const;
  // grad += g (first call stores a contiguous copy). g must match value's shape and
  // dtype, else ShapeError / ValueError.
  void accumulate_grad(const TensorView& g) const;
  // The same, but the first call adopts g itself instead of copying it when g is
  // contiguous and shares its storage with no other Tensor (a fresh result of an ops
  // backward); otherwise as above.
  void accumulate_grad(Tensor&& g) const;
  // Keeps this variable's gradient after backward() although it is an op's output (an
  // intermediate), for inspection (`qkv gradflow`). Leaves always keep theirs.
  void retain_grad() const;
  bool retains_grad() const;

  // Moves this variable onto caller-owned storage: `value` replaces value() (same shape
  // and dtype; the caller has copied the contents over) and `grad` becomes the gradient's
  // storage, which then stays defined: backward accumulates into it in place and
  // zero_grad() fills it with zeros instead of dropping it. Both must be contiguous and
  // match value's shape and dtype (ValueError / ShapeError). qkv::nn's parameter store
  // puts every parameter into one flat value arena and one flat gradient arena this way.
  void bind_storage(Tensor value, Tensor grad) const;
  // True after bind_storage().
  bool has_bound_grad() const;

  // True when both handles refer to the same variable.
  bool same_as(const Variable& other) const noexcept { return node_ == other.node_; }
  // The same for every handle of one variable, distinct between variables (a hash key).
  const void* identity() const noexcept { return node_.get(); }

 private:
  struct Node {
    Tensor value;
    Tensor grad;
    bool requires_grad = false;
    bool grad_bound = false;   // grad is caller-owned storage (bind_storage)
    bool retain_grad = false;  // keep grad after backward although an op produced it
  };
  Node& node() const;
  std::shared_ptr<Node> node_;
};

// Whether differentiable functions record on this thread (default true).
bool grad_mode_enabled() noexcept;

// RAII: disables recording on this thread for its lifetime (evaluation, gradient checks,
// optimizer updates); restores the previous mode on destruction.
class NoGradGuard {
 public:
  NoGradGuard() noexcept;
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Seeds d(loss)/d(loss) = 1 and runs this thread's tape in reverse, accumulating into
// every variable that requires grad; then clears the tape (also when a backward throws).
// Each entry is released as soon as its backward has run (see the top of this file).
// loss must hold exactly one element (else ShapeError) and require grad (else ValueError).
void backward(const Variable& loss);

// The same, calling on_ready(v) on this thread for every variable v on caller-owned
// gradient storage (bind_storage: the parameters) that the tape accumulates into, once,
// as soon as its gradient is complete: right after the last entry (in reverse order) that
// adds to it has run, while the rest of the backward pass is still to come. A data-
// parallel trainer starts sending those gradients then (overlapping the exchange with
// the backward pass, as PyTorch's DDP does with its buckets). Variables the tape never
// touches are not reported. on_ready must not record on the tape or call backward.
using GradReadyFn = std::function<void(const Variable&)>;
void backward(const Variable& loss, const GradReadyFn& on_ready);

// Entries on this thread's tape (for tests and diagnostics), and discarding them
// (a forward pass whose graph will not be differentiated).
std::size_t tape_size() noexcept;
void clear_tape() noexcept;

}  // namespace qkv::autograd
