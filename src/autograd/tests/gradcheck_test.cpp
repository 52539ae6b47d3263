// Every differentiable function, gradient-checked in float64 against central differences
// on several shapes (odd sizes included). The cases live in one table keyed by registry
// name; RegistryCoverage fails for any registered op without a case.
#include "qkv/autograd/gradcheck.h"

#include <map>
#include <memory>
#include <span>

#include "qkv/autograd/functions.h"
#include "qkv/autograd/registry.h"
#include "qkv/ops/elementwise.h"
#include "qkv/testing/tensors.h"

namespace qkv::autograd {
namespace {

using qkv::testing::random_ids;
using qkv::testing::random_tensor;
using Vars = std::vector<Variable>;

struct GradCase {
  std::string description;
  std::vector<Shape> input_shapes;  // the differentiable inputs, random normal
  ScalarFunction f;
};

// A scalar that depends on every element of y with a distinct random weight, so the
// check sees the full Jacobian (a plain sum would hide e.g. softmax's, which sums to 0).
Variable project(const Variable& y, uint64_t seed = 99) {
  const Variable weights(random_tensor(y.value().shape(), DType::F64, seed), false);
  return sum(mul(y, weights));
}

Tensor ids_tensor(const Shape& s, int64_t upper, uint64_t seed) {
  return random_ids(s, DType::F64, seed, upper);
}

template <class Fn>
GradCase unary(std::string d, Shape s, Fn fn) {
  return {std::move(d), {s}, [fn](const Vars& v) { return project(fn(v[0])); }};
}

template <class Fn>
GradCase binary(std::string d, Shape a, Shape b, Fn fn) {
  return {std::move(d), {a, b}, [fn](const Vars& v) { return project(fn(v[0], v[1])); }};
}

std::vector<GradCase> unary_cases(Variable (*fn)(const Variable&)) {
  return {unary("[3, 5]", {3, 5}, fn), unary("[7]", {7}, fn), unary("[2, 3, 4]", {2, 3, 4}, fn)};
}

std::vector<GradCase> elementwise_cases(Variable (*fn)(const Variable&, const Variable&)) {
  return {binary("[3, 5]", {3, 5}, {3, 5}, fn), binary("[7]", {7}, {7}, fn),
          binary("[2, 3, 4]", {2, 3, 4}, {2, 3, 4}, fn)};
}

std::vector<GradCase> matmul_cases() {
  auto mm = [](ops::MatmulOptions o) {
    return [o](const Variable& a, const Variable& b) { return matmul(a, b, o); };
  };
  return {binary("[3, 5] x [5, 4]", {3, 5}, {5, 4}, mm({})),
          binary("[1, 7] x [7, 1]", {1, 7}, {7, 1}, mm({})),
          binary("batched [2, 3, 4] x [2, 4, 3]", {2, 3, 4}, {2, 4, 3}, mm({})),
          binary("[5, 3]T x [4, 5]T", {5, 3}, {4, 5}, mm({true, true})),
          binary("batched [2, 4, 3]T x [2, 4, 5]", {2, 4, 3}, {2, 4, 5}, mm({true, false}))};
}

std::vector<GradCase> softmax_cases(bool log) {
  auto run = [log](const Variable& x, const ops::SoftmaxMask& m) {
    return log ? log_softmax(x, m) : softmax(x, m);
  };
  std::vector<GradCase> cases = {
      unary("[3, 5]", {3, 5}, [run](const Variable& x) { return run(x, {}); }),
      unary("[2, 3, 7]", {2, 3, 7}, [run](const Variable& x) { return run(x, {}); })};
  cases.push_back({"[4, 7] masked by lengths and bias", {{4, 7}}, [run, log](const Vars& v) {
                     static const std::vector<int64_t> lengths{7, 3, 0, 5};
                     const Tensor bias = random_tensor({4, 7}, DType::F64, 5);
                     bias.at<double>({1, 1}) = -INFINITY;  // a causal-style masked column
                     Variable y = run(v[0], {lengths, bias});
                     // log_softmax gives -inf where masked and -inf · w is NaN: sigmoid maps
                     // -inf to 0 (with zero derivative) and keeps visible entries informative.
                     return log ? project(sigmoid(y)) : project(y);
                   }});
  return cases;
}

std::vector<GradCase> layer_norm_cases() {
  auto ln = [](Shape x, int64_t c) {
    return GradCase{x.str(), {x, {c}, {c}}, [](const Vars& v) {
                      return project(layer_norm(v[0], v[1], v[2], 1e-5));
                    }};
  };
  return {ln({3, 5}, 5), ln({2, 3, 7}, 7), ln({1, 1}, 1)};
}

std::vector<GradCase> embedding_cases() {
  auto emb = [](Shape table, Shape ids, uint64_t seed) {
    const Tensor index = ids_tensor(ids, table[0], seed);
    return GradCase{table.str() + " ids " + ids.str(), {table}, [index](const Vars& v) {
                      return project(embedding(v[0], index));
                    }};
  };
  return {emb({7, 4}, {3, 2}, 1), emb({5, 3}, {6}, 2), emb({2, 5}, {9}, 3)};  // repeats
}

// Fused attention; the masked cases include a batch row with key length 0 (zero
// gradients) and causal rows seeing a single key.
std::vector<GradCase> attention_cases() {
  auto att = [](std::string d, Shape q, Shape k, Shape v, ops::FlashAttentionOptions o,
                std::vector<int64_t> lengths) {
    auto owned = std::make_shared<const std::vector<int64_t>>(std::move(lengths));
    return GradCase{std::move(d), {q, k, v}, [o, owned](const Vars& x) {
                      ops::FlashAttentionOptions opts = o;
                      opts.key_lengths = *owned;
                      return project(scaled_dot_attention(x[0], x[1], x[2], opts));
                    }};
  };
  return {
      att("[2, 3, 4] x [2, 5, 4] -> Dv 3", {2, 3, 4}, {2, 5, 4}, {2, 5, 3}, {0.5}, {}),
      att("[2, 2, 4, 3] causal, lengths {3, 0}", {2, 2, 4, 3}, {2, 2, 4, 3}, {2, 2, 4, 2},
          {0.8, true}, {3, 0}),
      att("[1, 1, 2] decoder step, length 4 of 5", {1, 1, 2}, {1, 5, 2}, {1, 5, 3}, {1.0}, {4})};
}

// Fused attention on packed rows: Q, K and V as columns of one input (self, causal),
// queries against keys and values of another (cross), one with a column no head reads
// (its gradient must stay 0).
std::vector<GradCase> attention_rows_cases() {
  static const std::vector<int64_t> kLengths{3, 1}, kQueries{2, 2};
  // Two heads of 2 over these lengths, the heads at these columns of q, k and v.
  auto rows = [](std::span<const int64_t> queries, int64_t q, int64_t k, int64_t v) {
    return ops::FlashRows{.heads = 2,
                          .head_dim = 2,
                          .query_lengths = queries,
                          .key_lengths = kLengths,
                          .q_column = q,
                          .k_column = k,
                          .v_column = v};
  };
  return {{"self: one [4, 12], 2 heads of 2, causal, lengths {3, 1}",
           {{4, 12}},
           [rows](const Vars& x) {
             return project(
                 scaled_dot_attention_rows(x[0], x[0], x[0], rows(kLengths, 0, 4, 8), {0.6, true}));
           }},
          {"cross: q [4, 5] from column 1 against k, v of one [4, 8]",
           {{4, 5}, {4, 8}},
           [rows](const Vars& x) {
             return project(
                 scaled_dot_attention_rows(x[0], x[1], x[1], rows(kQueries, 1, 4, 0), {0.9}));
           }}};
}

std::vector<GradCase> cross_entropy_cases() {
  auto ce = [](Shape logits, double smoothing, bool ignore_one) {
    Tensor targets = ids_tensor(logits.without_dim(-1), logits.back(), 11);
    if (ignore_one) targets.data<double>()[0] = -1;
    return GradCase{logits.str() + " eps " + std::to_string(smoothing),
                    {logits},
                    [targets, smoothing](const Vars& v) {
                      return cross_entropy(v[0], targets, {smoothing, -1});
                    }};
  };
  return {ce({4, 7}, 0.0, false), ce({4, 7}, 0.1, true), ce({2, 3, 5}, 0.2, false),
          ce({3, 5}, 0.0, false)};
}

// The fused output projection + loss: hidden [N, E], weight [V, E] (and bias [V]);
// chunks of 2 rows so that the checks cross chunk boundaries and a ragged last chunk.
std::vector<GradCase> linear_cross_entropy_cases() {
  auto lce = [](int64_t n, int64_t e, int64_t v, bool with_bias, double smoothing) {
    Tensor targets = ids_tensor({n}, v, 13);
    targets.data<double>()[1] = -1;  // a padding row
    std::vector<Shape> shapes{{n, e}, {v, e}};
    if (with_bias) shapes.push_back({v});
    return GradCase{"[" + std::to_string(n) + ", " + std::to_string(e) + "] x V " +
                        std::to_string(v) + (with_bias ? " + bias" : "") + " eps " +
                        std::to_string(smoothing),
                    shapes, [targets, smoothing, with_bias](const Vars& x) {
                      const Variable bias = with_bias ? x[2] : Variable();
                      return linear_cross_entropy(x[0], x[1], bias, targets, {smoothing, -1}, 2);
                    }};
  };
  return {lce(5, 3, 7, false, 0.1), lce(4, 4, 6, true, 0.0), lce(3, 2, 9, true, 0.2)};
}

// Recurrent cells (inputs of O(1) keep the gates off saturation), the masked blend with
// a constant 0/1 row mask, and the sequence ops (select twice from one input: the slices
// accumulate into one gradient).
void add_recurrent_cases(std::map<std::string, std::vector<GradCase>>& t) {
  t["gru_cell"] = {{"B 3, H 3",
                    {{3, 9}, {3, 9}, {3, 3}},
                    [](const Vars& v) { return project(gru_cell(v[0], v[1], v[2])); }},
                   {"B 1, H 1, composed twice", {{1, 3}, {1, 3}, {1, 1}}, [](const Vars& v) {
                      return project(gru_cell(v[0], v[1], gru_cell(v[0], v[1], v[2])));
                    }}};
  t["lstm_cell"] = {{"B 3, H 3, h and c",
                     {{3, 12}, {3, 12}, {3, 3}},
                     [](const Vars& v) {
                       const LstmCellOutput o = lstm_cell(v[0], v[1], v[2]);
                       return add(project(o.h, 98), project(o.c, 97));
                     }},
                    {"B 2, H 1, h only", {{2, 4}, {2, 4}, {2, 1}}, [](const Vars& v) {
                       return project(lstm_cell(v[0], v[1], v[2]).h);
                     }}};
  t["masked_blend"] = {
      {"[4, 5] rows 1, 3 from b",
       {{4, 5}, {4, 5}},
       [](const Vars& v) {
         return project(
             masked_blend(v[0], v[1], Tensor::from(Shape{4}, std::vector<double>{1, 0, 1, 0})));
       }},
      {"[2, 3, 2] with mask [2, 3]", {{2, 3, 2}, {2, 3, 2}}, [](const Vars& v) {
         const Tensor mask = Tensor::from(Shape{2, 3}, std::vector<double>{0, 1, 1, 0, 0, 1});
         return project(masked_blend(v[0], v[1], mask));
       }}};
  t["concat"] = {
      {"[2, 3, 2] [2, 1, 2] on axis 1",
       {{2, 3, 2}, {2, 1, 2}},
       [](const Vars& v) {
         return project(concat({v[0], v[1]}, 1));
       }},
      {"[3, 2] [3, 4] [3, 1] on the last axis", {{3, 2}, {3, 4}, {3, 1}}, [](const Vars& v) {
         return project(concat({v[0], v[1], v[2]}, -1));
       }}};
  t["stack"] = {{"3 x [2, 3] on axis 1",
                 {{2, 3}, {2, 3}, {2, 3}},
                 [](const Vars& v) {
                   return project(stack({v[0], v[1], v[2]}, 1));
                 }},
                {"2 x [4] on the last axis", {{4}, {4}}, [](const Vars& v) {
                   return project(stack({v[0], v[1]}, -1));
                 }}};
  t["select"] = {unary("[3, 4, 5] axis 1 index 2", {3, 4, 5},
                       [](const Variable& x) { return select(x, 1, 2); }),
                 {"[3, 4] rows 0 and 2, multiplied", {{3, 4}}, [](const Vars& v) {
                    return project(mul(select(v[0], 0, 0), select(v[0], 0, 2)));
                  }}};
  // The real rows of a padded [B = 2, T = 3] batch with lengths 2 and 1.
  static const std::vector<int64_t> kRows{0, 1, 3};
  t["gather_rows"] = {
      unary("[6, 4] rows 0, 1, 3", {6, 4}, [](const Variable& x) { return gather_rows(x, kRows); }),
      {"[6, 2, 3] packed, then unpacked", {{6, 2, 3}}, [](const Vars& v) {
         return project(scatter_rows(gather_rows(v[0], kRows), kRows, 6));
       }}};
  t["scatter_rows"] = {unary("[3, 5] into 6 rows", {3, 5},
                             [](const Variable& x) { return scatter_rows(x, kRows, 6); })};
}

std::map<std::string, std::vector<GradCase>> build_table() {
  std::map<std::string, std::vector<GradCase>> t;
  t["matmul"] = matmul_cases();
  t["add"] = elementwise_cases(add);
  t["sub"] = elementwise_cases(sub);
  t["mul"] = elementwise_cases(mul);
  t["scale"] = {unary("[3, 5] s=-1.3", {3, 5}, [](const Variable& x) { return scale(x, -1.3); }),
                unary("[1] s=2", {1}, [](const Variable& x) { return scale(x, 2.0); })};
  t["add_bias"] = {binary("[3, 5] + [5]", {3, 5}, {5}, add_bias),
                   binary("[2, 3, 7] + [7]", {2, 3, 7}, {7}, add_bias)};
  t["tanh"] = unary_cases(tanh);
  t["sigmoid"] = unary_cases(sigmoid);
  t["relu"] = unary_cases(relu);
  t["gelu"] = unary_cases(gelu);
  t["sum"] = {
      {"[3, 5]", {{3, 5}}, [](const Vars& v) { return sum(v[0]); }},
      {"[2, 3, 4] of x*x", {{2, 3, 4}}, [](const Vars& v) { return sum(mul(v[0], v[0])); }}};
  t["mean"] = {{"[3, 5]", {{3, 5}}, [](const Vars& v) { return mean(v[0]); }},
               {"[7] of tanh", {{7}}, [](const Vars& v) { return mean(tanh(v[0])); }}};
  t["sum_last"] = {unary("[3, 5]", {3, 5}, sum_last), unary("[2, 3, 7]", {2, 3, 7}, sum_last)};
  t["softmax"] = softmax_cases(false);
  t["log_softmax"] = softmax_cases(true);
  t["layer_norm"] = layer_norm_cases();
  t["l2_normalize"] = {
      unary("[3, 5]", {3, 5}, [](const Variable& x) { return l2_normalize(x); }),
      unary("[2, 3, 7]", {2, 3, 7}, [](const Variable& x) { return l2_normalize(x); }),
      unary("[4, 1]", {4, 1}, [](const Variable& x) { return l2_normalize(x); })};
  t["pairwise_add"] = {
      binary("[2, 3, 4] (+) [2, 5, 4]", {2, 3, 4}, {2, 5, 4}, pairwise_add),
      binary("[1, 1, 1] (+) [1, 3, 1]", {1, 1, 1}, {1, 3, 1}, pairwise_add),
      {"tanh of [2, 3, 2] (+) [2, 4, 2], then x x", {{2, 3, 2}, {2, 4, 2}}, [](const Vars& v) {
         const Variable y = tanh(pairwise_add(v[0], v[1]));
         return project(mul(y, y));
       }}};
  t["embedding"] = embedding_cases();
  t["cross_entropy"] = cross_entropy_cases();
  t["linear_cross_entropy"] = linear_cross_entropy_cases();
  t["linear"] = {{"[4, 3] x [5, 3]ᵀ + [5]",
                  {{4, 3}, {5, 3}, {5}},
                  [](const Vars& v) { return project(linear(v[0], v[1], v[2])); }},
                 {"x used as the weight too: [3, 3] x [3, 3]ᵀ + [3]",
                  {{3, 3}, {3}},
                  [](const Vars& v) { return project(linear(v[0], v[0], v[1])); }}};
  t["feed_forward_relu"] = {
      {"[5, 3] -> hidden 4 -> 2",
       {{5, 3}, {4, 3}, {4}, {2, 4}, {2}},
       [](const Vars& v) { return project(feed_forward_relu(v[0], v[1], v[2], v[3], v[4])); }},
      {"[2, 3, 4] rows -> hidden 7 -> 4, twice (gradients added)",
       {{6, 4}, {7, 4}, {7}, {4, 7}, {4}},
       [](const Vars& v) {
         const Variable once = feed_forward_relu(v[0], v[1], v[2], v[3], v[4]);
         return project(feed_forward_relu(once, v[1], v[2], v[3], v[4]));
       }}};
  t["stacked_linear"] = {
      {"[4, 3] x {[2, 3], [3, 3]} + biases",
       {{4, 3}, {2, 3}, {3, 3}, {2}, {3}},
       [](const Vars& v) {
         return project(stacked_linear(v[0], {v[1], v[2]}, {v[3], v[4]}));
       }},
      {"[5, 2] x three [2, 2], no bias", {{5, 2}, {2, 2}, {2, 2}, {2, 2}}, [](const Vars& v) {
         return project(stacked_linear(v[0], {v[1], v[2], v[3]}));
       }}};
  t["scaled_dot_attention"] = attention_cases();
  t["scaled_dot_attention_rows"] = attention_rows_cases();
  t["additive_scores"] = {
      {"[2, 3, 4] x [2, 5, 4], A 4",
       {{2, 3, 4}, {2, 5, 4}, {4}},
       [](const Vars& v) { return project(additive_scores(v[0], v[1], v[2])); }},
      {"decoder step [1, 1, 3] x [1, 6, 3]",
       {{1, 1, 3}, {1, 6, 3}, {3}},
       [](const Vars& v) { return project(additive_scores(v[0], v[1], v[2])); }},
      {"softmax of scores, [2, 2, 5] x [2, 3, 5]", {{2, 2, 5}, {2, 3, 5}, {5}}, [](const Vars& v) {
         return project(softmax(additive_scores(v[0], v[1], v[2])));
       }}};
  t["dropout"] = {unary("[4, 5] p=0.3", {4, 5},
                        [](const Variable& x) {
                          return dropout(x, {0.3, 1, 2, 3});
                        }),
                  unary("[7] p=0", {7}, [](const Variable& x) {
                    return dropout(x, {0.0, 1, 2, 3});
                  })};
  t["dropout_add"] = {binary("[4, 5] + dropout p=0.3", {4, 5}, {4, 5},
                             [](const Variable& r, const Variable& x) {
                               return dropout_add(r, x, {0.3, 1, 2, 3});
                             }),
                      binary("[2, 3, 7] + dropout p=0", {2, 3, 7}, {2, 3, 7},
                             [](const Variable& r, const Variable& x) {
                               return dropout_add(r, x, {0.0, 1, 2, 3});
                             })};
  t["transpose"] = {
      unary("[3, 4, 5] (0, 2)", {3, 4, 5}, [](const Variable& x) { return transpose(x, 0, 2); }),
      unary("[3, 5] (-1, -2)", {3, 5}, [](const Variable& x) { return transpose(x, -1, -2); })};
  t["reshape"] = {unary("[3, 4] -> [2, 6]", {3, 4},
                        [](const Variable& x) {
                          return reshape(x, {2, 6});
                        }),
                  unary("transposed [3, 5] -> [15]", {3, 5},
                        [](const Variable& x) { return reshape(transpose(x, 0, 1), {15}); })};
  add_recurrent_cases(t);
  return t;
}

const std::map<std::string, std::vector<GradCase>>& table() {
  static const auto t = build_table();
  return t;
}

TEST(Gradcheck, EveryCaseInTheTablePasses) {
  uint64_t seed = 1000;
  for (const auto& [name, cases] : table()) {
    for (const GradCase& c : cases) {
      SCOPED_TRACE(name + " " + c.description);
      std::vector<Tensor> inputs;
      for (const Shape& s : c.input_shapes) inputs.push_back(random_tensor(s, DType::F64, ++seed));
      const GradcheckReport report = gradcheck(c.f, inputs);
      EXPECT_TRUE(report.passed) << report.message;
      EXPECT_GT(report.elements_checked, 0);
    }
  }
}

TEST(Gradcheck, RegistryCoverageEveryRegisteredOpHasACase) {
  const std::vector<std::string> ops = registered_ops();
  EXPECT_GE(ops.size(), 21u);
  for (const std::string& op : ops) {
    const auto it = table().find(op);
    EXPECT_TRUE(it != table().end() && !it->second.empty())
        << "registered op '" << op << "' has no gradcheck case";
  }
  for (const auto& [name, cases] : table())
    EXPECT_TRUE(std::find(ops.begin(), ops.end(), name) != ops.end())
        << "gradcheck case '" << name << "' names no registered op";
}

TEST(Gradcheck, DetectsAWrongGradient) {
  // The "doubled" variable is computed off the tape, so backward misses the dependence of
  // f on x through it: analytic 2x, true derivative 4x.
  const ScalarFunction wrong = [](const Vars& v) {
    const Variable doubled(ops::scale(v[0].value(), 2.0), true);
    return sum(mul(doubled, v[0]));
  };
  const GradcheckReport r = gradcheck(wrong, {random_tensor({3}, DType::F64, 1)});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_input, 0);
  EXPECT_GE(r.failed_element, 0);
  EXPECT_NE(r.message.find("mismatch"), std::string::npos) << r.message;
}

TEST(Gradcheck, RejectsFloat32Inputs) {
  EXPECT_TRUE(qkv::testing::throws_with<ValueError>(
      [] {
        gradcheck([](const Vars& v) { return sum(v[0]); }, {random_tensor({2}, DType::F32, 1)});
      },
      {"f64", "f32[2]"}));
}

}  // namespace
}  // namespace qkv::autograd
