#include "qkv/autograd/variable.h"

#include <cstring>
#include <span>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "detail/record.h"
#include "qkv/ops/elementwise.h"

namespace qkv::autograd {
namespace {

struct TapeEntry {
  std::string_view op;
  Variable output;
  detail::BackwardFn backward;
  // The inputs on caller-owned gradient storage (parameters) this entry accumulates into:
  // what backward(loss, on_ready) needs to know when each one's gradient is complete.
  std::vector<Variable> bound_inputs;
};

thread_local std::vector<TapeEntry> tape;
thread_local bool grad_mode = true;

// After an entry's backward has run nothing reads its output's gradient or its saved
// tensors again (every consumer of the output was recorded later and has already run):
// free them now, so the step's peak memory is the live frontier, not the whole graph.
void release(TapeEntry& entry) {
  const Variable& out = entry.output;
  if (!out.retains_grad() && !out.has_bound_grad()) out.zero_grad();
  entry = TapeEntry{};  // destroys the closure, and our handle on the output
}

}  // namespace

Variable::Variable(Tensor value, bool requires_grad)
    : node_(std::make_shared<Node>(Node{std::move(value), Tensor(), requires_grad, false})) {}

Variable::Node& Variable::node() const {
  QKV_CHECK(node_ != nullptr, ValueError, "use of an undefined Variable");
  return *node_;
}

const Tensor& Variable::value() const {
  return node().value;
}
const Tensor& Variable::grad() const {
  return node().grad;
}
bool Variable::requires_grad() const {
  return node().requires_grad;
}
void Variable::set_requires_grad(bool requires_grad) const {
  node().requires_grad = requires_grad;
}
Tensor Variable::take_grad() const {
  Node& n = node();
  if (n.grad_bound) return n.grad;  // caller-owned storage stays: a handle sharing it
  return std::exchange(n.grad, Tensor());
}

void Variable::zero_grad() const {
  Node& n = node();
  if (!n.grad_bound) {
    n.grad = Tensor();
    return;
  }
  // Bound storage stays; all-zero bits are +0.0 in both float dtypes.
  std::memset(n.grad.view().raw_data(), 0, size_t(n.grad.numel()) * dtype_size(n.grad.dtype()));
}

void Variable::bind_storage(Tensor value, Tensor grad) const {
  Node& n = node();
  for (const Tensor* t : {&value, &grad}) {
    QKV_CHECK(t->defined() && t->is_contiguous(), ValueError,
              "bind_storage: storage must be defined and contiguous, got ",
              t->defined() ? describe(*t) : std::string("an undefined tensor"));
    QKV_CHECK(t->shape() == n.value.shape(), ShapeError, "bind_storage: storage ", describe(*t),
              " does not match variable ", describe(n.value));
    QKV_CHECK(t->dtype() == n.value.dtype(), ValueError, "bind_storage: storage ", describe(*t),
              " does not match variable ", describe(n.value));
  }
  n.value = std::move(value);
  n.grad = std::move(grad);
  n.grad_bound = true;
}

bool Variable::has_bound_grad() const {
  return node().grad_bound;
}

void Variable::retain_grad() const {
  node().retain_grad = true;
}
bool Variable::retains_grad() const {
  return node().retain_grad;
}

namespace {
void check_grad_matches(const TensorView& g, const Tensor& value) {
  QKV_CHECK(g.shape() == value.shape(), ShapeError, "gradient ", describe(g),
            " does not match variable ", describe(value));
  QKV_CHECK(g.dtype() == value.dtype(), ValueError, "gradient ", describe(g),
            " does not match variable ", describe(value));
}
}  // namespace

void Variable::accumulate_grad(Tensor&& g) const {
  Node& n = node();
  check_grad_matches(g, n.value);
  // Nobody else can see g's storage, so adopting it is indistinguishable from a copy and
  // saves one allocation plus one pass over the data (the Transformer's backward spent
  // most of its copy time here).
  if (!n.grad.defined() && g.is_contiguous() && g.sole_owner()) {
    n.grad = std::move(g);
    return;
  }
  accumulate_grad(g.view());
}

void Variable::accumulate_grad(const TensorView& g) const {
  Node& n = node();
  check_grad_matches(g, n.value);
  if (!n.grad.defined()) {
    // A private copy: backward functions may hand the same tensor to several inputs.
    n.grad = Tensor::empty(g.shape(), g.dtype());
    copy_into(g, n.grad);
    return;
  }
  ops::accumulate_into(n.grad, g);
}

bool grad_mode_enabled() noexcept {
  return grad_mode;
}

NoGradGuard::NoGradGuard() noexcept : previous_(grad_mode) {
  grad_mode = false;
}
NoGradGuard::~NoGradGuard() {
  grad_mode = previous_;
}

std::size_t tape_size() noexcept {
  return tape.size();
}
void clear_tape() noexcept {
  tape.clear();
}

void backward(const Variable& loss) {
  backward(loss, GradReadyFn());
}

void backward(const Variable& loss, const GradReadyFn& on_ready) {
  QKV_CHECK(loss.value().numel() == 1, ShapeError, "backward: loss ", describe(loss.value()),
            " must hold exactly one element");
  QKV_CHECK(loss.requires_grad(), ValueError,
            "backward: loss does not require grad (no input requires grad, or it was computed "
            "under NoGradGuard)");
  // Take the tape first: it is cleared even if a backward function throws.
  std::vector<TapeEntry> entries;
  entries.swap(tape);
  // For each bound input, the first entry (in recording order) that uses it: once the
  // reverse pass has run that entry, nothing accumulates into its gradient any more.
  std::vector<std::vector<Variable>> complete_after;
  if (on_ready) {
    complete_after.resize(entries.size());
    std::unordered_set<const void*> seen;
    for (size_t i = 0; i < entries.size(); ++i)
      for (Variable& v : entries[i].bound_inputs)
        if (seen.insert(v.identity()).second) complete_after[i].push_back(std::move(v));
  }
  loss.accumulate_grad(Tensor::full(loss.value().shape(), 1.0, loss.value().dtype()));
  for (size_t i = entries.size(); i-- > 0;) {
    TapeEntry& entry = entries[i];
    // An entry whose output received no gradient is not on a path to the loss.
    const Variable& out = entry.output;
    if (out.grad().defined()) {
      // release() drops an intermediate's gradient after this entry anyway: hand it
      // over, so that a backward that passes it on can move it instead of copying it
      // (take_grad leaves a bound gradient in place and returns a shared handle).
      entry.backward(out.retains_grad() ? Tensor(out.grad()) : out.take_grad());
    }
    release(entry);
    if (on_ready)
      for (const Variable& v : complete_after[i]) on_ready(v);
  }
}

namespace detail {

Variable record(const OpRegistration& op, Tensor value, std::span<const Variable> inputs,
                BackwardFn backward) {
  bool needs_grad = false;
  if (grad_mode)
    for (const Variable& v : inputs) needs_grad = needs_grad || v.requires_grad();
  Variable out(std::move(value), needs_grad);
  if (needs_grad) {
    std::vector<Variable> bound;
    for (const Variable& v : inputs)
      if (v.requires_grad() && v.has_bound_grad()) bound.push_back(v);
    tape.push_back({op.name(), out, std::move(backward), std::move(bound)});
  }
  return out;
}

}  // namespace detail
}  // namespace qkv::autograd
