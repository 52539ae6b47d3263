// qkv.attention: attention::attend and attention::MultiHeadAttention on numpy arrays, the
// forward alone or with the gradients of every input for a given output gradient. The
// arrays are read in place; the computation is the C++ API's own call, so the results
// equal it bit for bit.
#include "qkv/attention/attention.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

#include "arrays.h"
#include "bindings.h"
#include "qkv/attention/multi_head.h"
#include "qkv/autograd/functions.h"

namespace qkv::python {
namespace {

using autograd::Variable;

attention::ScoreKind score_kind(const std::string& name) {
  if (name == "scaled_dot") return attention::ScoreKind::ScaledDot;
  if (name == "dot") return attention::ScoreKind::Dot;
  if (name == "cosine") return attention::ScoreKind::Cosine;
  if (name == "general") return attention::ScoreKind::General;
  if (name == "additive") return attention::ScoreKind::Additive;
  throw py::value_error("kind='" + name +
                        "' is not a score function; use one of 'scaled_dot', 'dot', "
                        "'cosine', 'general', 'additive'");
}

// The mask arguments every attention function takes.
struct MaskArgs {
  py::object key_lengths, bias, allowed;
  bool causal = false;
};

attention::MaskSpec mask_spec(const MaskArgs& a, DType dtype) {
  attention::MaskSpec m;
  if (!a.key_lengths.is_none()) m.key_lengths = int_list(a.key_lengths, "key_lengths");
  m.causal = a.causal;
  if (!a.bias.is_none()) m.bias = tensor_from_array(a.bias, "bias", -1, dtype);
  if (!a.allowed.is_none()) m.allowed = tensor_from_array(a.allowed, "allowed", -1, dtype);
  return m;
}

// A gradient to hand back: the array, or None for an input that got none (a fully masked
// batch row gives zeros, but an unused parameter has no gradient at all).
py::object grad_of(const Variable& x) {
  if (!x.defined() || !x.grad().defined()) return py::none();
  return array_from_tensor(x.grad());
}

// ---- attend ----------------------------------------------------------------------------

struct AttendCall {
  Variable q, k, v;
  attention::MaskSpec mask;
  attention::ScoreParams params;
  attention::AttentionOptions options;
  Tensor grad_output;  // defined: also run backward
};

AttendCall attend_call(const py::object& q, const py::object& k, const py::object& v,
                       const std::string& kind, const MaskArgs& mask, const py::object& params,
                       std::optional<double> scale, double temperature, bool need_weights,
                       bool fused, bool grads) {
  AttendCall c;
  const Tensor tq = tensor_from_array(q, "q", 3);
  c.q = Variable(tq, grads);
  c.k = Variable(tensor_from_array(k, "k", 3, tq.dtype()), grads);
  c.v = Variable(tensor_from_array(v, "v", 3, tq.dtype()), grads);
  c.mask = mask_spec(mask, tq.dtype());
  if (!params.is_none()) {
    if (!py::isinstance<py::dict>(params))
      throw py::type_error("params must be a dict of arrays with keys 'w', 'u', 'b', 'v'");
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(params)) {
      const std::string name = py::str(key).cast<std::string>();
      const std::string label = "params['" + name + "']";
      Variable p(tensor_from_array(value, label.c_str(), -1, tq.dtype()), grads);
      if (name == "w")
        c.params.w = p;
      else if (name == "u")
        c.params.u = p;
      else if (name == "b")
        c.params.b = p;
      else if (name == "v")
        c.params.v = p;
      else
        throw py::value_error("params has the key '" + name +
                              "'; the score parameters are 'w', 'u', 'b' and 'v'");
    }
  }
  c.options.kind = score_kind(kind);
  if (scale) {
    if (!(*scale > 0)) throw py::value_error("scale must be > 0 (None: 1/sqrt(Dk))");
    c.options.scale = *scale;
  }
  c.options.temperature = temperature;
  c.options.need_weights = need_weights;
  c.options.fused = fused;
  return c;
}

py::object attend(const py::object& q, const py::object& k, const py::object& v,
                  const std::string& kind, const py::object& key_lengths, bool causal,
                  const py::object& bias, const py::object& allowed, std::optional<double> scale,
                  double temperature, const py::object& params, bool need_weights, bool fused) {
  const AttendCall c = attend_call(q, k, v, kind, {key_lengths, bias, allowed, causal}, params,
                                   scale, temperature, need_weights, fused, false);
  attention::AttentionOutput out;
  {
    py::gil_scoped_release release;
    autograd::NoGradGuard no_grad;
    out = attention::attend(c.q, c.k, c.v, c.mask, c.params, c.options);
  }
  py::object weights =
      out.weights.defined() ? py::object(array_from_tensor(out.weights.value())) : py::none();
  return py::make_tuple(array_from_tensor(out.context.value()), weights);
}

// loss = Σ context ⊙ grad_output, so that d loss / d context = grad_output and backward
// gives the vector-Jacobian products of every input.
// A forward that throws leaves its entries on this thread's tape: drop them, so the next
// call starts clean.
struct TapeGuard {
  ~TapeGuard() { autograd::clear_tape(); }
};

void backward_through(const Variable& output, const Tensor& grad_output) {
  QKV_CHECK(grad_output.shape() == output.value().shape(), ShapeError, "grad_output ",
            describe(grad_output), " should have the output's shape ", describe(output.value()));
  const Variable loss = autograd::sum(autograd::mul(output, Variable(grad_output)));
  autograd::backward(loss);
}

py::dict attend_backward(const py::object& q, const py::object& k, const py::object& v,
                         const py::object& grad_output, const std::string& kind,
                         const py::object& key_lengths, bool causal, const py::object& bias,
                         const py::object& allowed, std::optional<double> scale, double temperature,
                         const py::object& params, bool fused) {
  AttendCall c = attend_call(q, k, v, kind, {key_lengths, bias, allowed, causal}, params, scale,
                             temperature, false, fused, true);
  const Tensor g = tensor_from_array(grad_output, "grad_output", 3, c.q.value().dtype());
  {
    py::gil_scoped_release release;
    const TapeGuard tape;
    const attention::AttentionOutput out =
        attention::attend(c.q, c.k, c.v, c.mask, c.params, c.options);
    backward_through(out.context, g);
  }
  py::dict grads;
  grads["q"] = grad_of(c.q);
  grads["k"] = grad_of(c.k);
  grads["v"] = grad_of(c.v);
  py::dict param_grads;
  for (const auto& [name, p] : {std::pair{"w", c.params.w}, std::pair{"u", c.params.u},
                                std::pair{"b", c.params.b}, std::pair{"v", c.params.v}})
    if (p.defined()) param_grads[name] = grad_of(p);
  grads["params"] = param_grads;
  return grads;
}

// ---- multi-head ------------------------------------------------------------------------

struct MultiHeadCall {
  Variable query, key, value;
  attention::MultiHeadParams params;
  attention::MaskSpec mask;
  int64_t heads = 0;
};

// PyTorch's layout: in_proj_weight [3E, E] holds W_q, W_k, W_v as row blocks,
// in_proj_bias [3E], out_proj_weight [E, E], out_proj_bias [E].
MultiHeadCall multi_head_call(const py::object& query, const py::object& key,
                              const py::object& value, int64_t num_heads,
                              const py::object& in_proj_weight, const py::object& in_proj_bias,
                              const py::object& out_proj_weight, const py::object& out_proj_bias,
                              const MaskArgs& mask, bool grads) {
  MultiHeadCall c;
  const Tensor tq = tensor_from_array(query, "query", 3);
  const DType dt = tq.dtype();
  c.query = Variable(tq, grads);
  c.key = key.is(query) ? c.query : Variable(tensor_from_array(key, "key", 3, dt), grads);
  c.value = value.is(key) ? c.key : Variable(tensor_from_array(value, "value", 3, dt), grads);
  const Tensor w_in = tensor_from_array(in_proj_weight, "in_proj_weight", 2, dt);
  const int64_t e = tq.dim(2);
  if (w_in.dim(0) != 3 * e || w_in.dim(1) != e)
    throw py::value_error("in_proj_weight is [" + std::to_string(w_in.dim(0)) + ", " +
                          std::to_string(w_in.dim(1)) + "] but should be [3E, E] = [" +
                          std::to_string(3 * e) + ", " + std::to_string(e) +
                          "] for query's E = " + std::to_string(e));
  // Each block a leaf of its own (a contiguous row slice: no copy), so gradients come
  // back per block and are stacked again into in_proj_weight's layout by the caller.
  c.params.wq = Variable(w_in.slice(0, 0, e), grads);
  c.params.wk = Variable(w_in.slice(0, e, 2 * e), grads);
  c.params.wv = Variable(w_in.slice(0, 2 * e, 3 * e), grads);
  c.params.wo = Variable(tensor_from_array(out_proj_weight, "out_proj_weight", 2, dt), grads);
  if (!in_proj_bias.is_none()) {
    const Tensor b_in = tensor_from_array(in_proj_bias, "in_proj_bias", 1, dt);
    if (b_in.dim(0) != 3 * e)
      throw py::value_error("in_proj_bias has " + std::to_string(b_in.dim(0)) +
                            " elements but should have 3E = " + std::to_string(3 * e));
    c.params.bq = Variable(b_in.slice(0, 0, e), grads);
    c.params.bk = Variable(b_in.slice(0, e, 2 * e), grads);
    c.params.bv = Variable(b_in.slice(0, 2 * e, 3 * e), grads);
  }
  if (!out_proj_bias.is_none())
    c.params.bo = Variable(tensor_from_array(out_proj_bias, "out_proj_bias", 1, dt), grads);
  c.mask = mask_spec(mask, dt);
  c.heads = num_heads;
  return c;
}

py::object multi_head_attention(const py::object& query, const py::object& key,
                                const py::object& value, int64_t num_heads,
                                const py::object& in_proj_weight, const py::object& in_proj_bias,
                                const py::object& out_proj_weight, const py::object& out_proj_bias,
                                const py::object& key_lengths, bool causal, const py::object& bias,
                                const py::object& allowed, bool need_weights,
                                bool average_attn_weights) {
  const MultiHeadCall c =
      multi_head_call(query, key, value, num_heads, in_proj_weight, in_proj_bias, out_proj_weight,
                      out_proj_bias, {key_lengths, bias, allowed, causal}, false);
  attention::MultiHeadOptions o;
  o.need_weights = need_weights;
  o.head_weights =
      average_attn_weights ? attention::HeadWeights::Averaged : attention::HeadWeights::PerHead;
  attention::MultiHeadOutput out;
  {
    py::gil_scoped_release release;
    autograd::NoGradGuard no_grad;
    const attention::MultiHeadAttention mha(c.params, c.heads);
    out = mha.forward(c.query, c.key, c.value, c.mask, o);
  }
  py::object weights =
      out.weights.defined() ? py::object(array_from_tensor(out.weights.value())) : py::none();
  return py::make_tuple(array_from_tensor(out.output.value()), weights);
}

// The three blocks' gradients stacked back into in_proj's layout (zeros for a block that
// got none: a projection whose input was fully masked still has a zero gradient).
py::object stacked_grad(const Variable& a, const Variable& b, const Variable& c) {
  const py::module_ np = py::module_::import("numpy");
  py::list blocks;
  for (const Variable* x : {&a, &b, &c})
    blocks.append(x->grad().defined() ? py::object(array_from_tensor(x->grad()))
                                      : np.attr("zeros_like")(array_from_tensor(x->value())));
  return np.attr("concatenate")(blocks);
}

py::dict multi_head_attention_backward(const py::object& query, const py::object& key,
                                       const py::object& value, const py::object& grad_output,
                                       int64_t num_heads, const py::object& in_proj_weight,
                                       const py::object& in_proj_bias,
                                       const py::object& out_proj_weight,
                                       const py::object& out_proj_bias,
                                       const py::object& key_lengths, bool causal,
                                       const py::object& bias, const py::object& allowed) {
  const MultiHeadCall c =
      multi_head_call(query, key, value, num_heads, in_proj_weight, in_proj_bias, out_proj_weight,
                      out_proj_bias, {key_lengths, bias, allowed, causal}, true);
  const Tensor g = tensor_from_array(grad_output, "grad_output", 3, c.query.value().dtype());
  {
    py::gil_scoped_release release;
    const TapeGuard tape;
    const attention::MultiHeadAttention mha(c.params, c.heads);
    backward_through(mha.forward(c.query, c.key, c.value, c.mask).output, g);
  }
  py::dict grads;
  grads["query"] = grad_of(c.query);
  if (!c.key.same_as(c.query)) grads["key"] = grad_of(c.key);
  if (!c.value.same_as(c.key)) grads["value"] = grad_of(c.value);
  grads["in_proj_weight"] = stacked_grad(c.params.wq, c.params.wk, c.params.wv);
  grads["out_proj_weight"] = grad_of(c.params.wo);
  if (c.params.bq.defined())
    grads["in_proj_bias"] = stacked_grad(c.params.bq, c.params.bk, c.params.bv);
  if (c.params.bo.defined()) grads["out_proj_bias"] = grad_of(c.params.bo);
  return grads;
}

}  // namespace

void bind_attention(py::module_& m) {
  using namespace pybind11::literals;
  m.def("attend", &attend, R"(Attention of queries over keys and values.

    q [B, Tq, Dq], k [B, Tk, Dk], v [B, Tk, Dv]: float32 or float64 numpy arrays, one dtype,
    C-contiguous (read in place, not copied). Returns (context [B, Tq, Dv], weights
    [B, Tq, Tk] or None without need_weights). Rows of weights sum to 1 over the visible
    keys; a query with no visible key gets zero weights and a zero context.

    kind: 'scaled_dot' (q.k * scale, scale None: 1/sqrt(Dk)), 'dot', 'cosine'
      (q.k / (|q||k|) / temperature), 'general' (q W k, params={'w': [Dq, Dk]}),
      'additive' (v . tanh(q W + k U + b), params={'w': [Dq, A], 'u': [Dk, A], 'v': [A],
      'b': [A] optional}).
    Masks (a key is visible when every one allows it): key_lengths [B] (key j visible iff
      j < key_lengths[b]), causal (query i sees keys j <= i + Tk - Tq), bias ([Tq, Tk] or
      [B, Tq, Tk], added to the scores; -inf masks), allowed (same shapes, 1 visible,
      0 masked).
    fused=False forces the composed path (the oracle the fused kernels are tested against).)",
        "q"_a, "k"_a, "v"_a, py::kw_only(), "kind"_a = "scaled_dot", "key_lengths"_a = py::none(),
        "causal"_a = false, "bias"_a = py::none(), "allowed"_a = py::none(), "scale"_a = py::none(),
        "temperature"_a = 1.0, "params"_a = py::none(), "need_weights"_a = true, "fused"_a = true);
  m.def("attend_backward", &attend_backward,
        R"(Gradients of attend() for the output gradient grad_output [B, Tq, Dv].

    Takes attend()'s arguments plus grad_output (d loss / d context). Returns a dict with
    'q', 'k', 'v' and 'params' (a dict with the gradient of each score parameter given:
    'w', 'u', 'b', 'v'), each shaped like its input.
    The gradients are the vector-Jacobian products the library's backward computes: check
    them against finite differences of attend().)",
        "q"_a, "k"_a, "v"_a, "grad_output"_a, py::kw_only(), "kind"_a = "scaled_dot",
        "key_lengths"_a = py::none(), "causal"_a = false, "bias"_a = py::none(),
        "allowed"_a = py::none(), "scale"_a = py::none(), "temperature"_a = 1.0,
        "params"_a = py::none(), "fused"_a = true);
  m.def("multi_head_attention", &multi_head_attention,
        R"(Multi-head attention with PyTorch's parameter layout (batch first).

    query [B, Tq, E], key/value [B, Tk, E]; in_proj_weight [3E, E] (W_q, W_k, W_v as row
    blocks, applied as x W^T), in_proj_bias [3E] or None, out_proj_weight [E, E],
    out_proj_bias [E] or None: the tensors of torch.nn.MultiheadAttention(E, num_heads,
    batch_first=True). Masks as attend(). Returns (output [B, Tq, E], weights: [B, Tq, Tk]
    averaged over heads, [B, H, Tq, Tk] with average_attn_weights=False, None without
    need_weights). Passing the same array as query, key and value runs self-attention
    with one stacked projection, as the Transformer does.)",
        "query"_a, "key"_a, "value"_a, "num_heads"_a, "in_proj_weight"_a, "in_proj_bias"_a,
        "out_proj_weight"_a, "out_proj_bias"_a, py::kw_only(), "key_lengths"_a = py::none(),
        "causal"_a = false, "bias"_a = py::none(), "allowed"_a = py::none(),
        "need_weights"_a = true, "average_attn_weights"_a = true);
  m.def("multi_head_attention_backward", &multi_head_attention_backward,
        R"(Gradients of multi_head_attention() for the output gradient grad_output [B, Tq, E].

    Returns a dict with 'query' (and 'key', 'value' when they are other arrays than
    query), 'in_proj_weight', 'out_proj_weight' and the biases given, each shaped like its
    input.)",
        "query"_a, "key"_a, "value"_a, "grad_output"_a, "num_heads"_a, "in_proj_weight"_a,
        "in_proj_bias"_a, "out_proj_weight"_a, "out_proj_bias"_a, py::kw_only(),
        "key_lengths"_a = py::none(), "causal"_a = false, "bias"_a = py::none(),
        "allowed"_a = py::none());
}

}  // namespace qkv::python
