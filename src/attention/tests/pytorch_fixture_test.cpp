// qkv::attention against PyTorch goldens (tests/fixtures/attention, written by
// tools/make_attention_fixtures.py with torch in float64): forward values, attention
// weights and the gradients of loss = sum(output ⊙ R) w.r.t. inputs and parameters, in
// float64 (~1e-10 relative) and float32 (~1e-5 relative; inputs are float32-exact).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "fixture_loader.h"
#include "qkv/attention/attention.h"
#include "qkv/attention/multi_head.h"
#include "qkv/autograd/functions.h"
#include "qkv/autograd/variable.h"
#include "qkv/base/error.h"
#include "qkv/ops/softmax.h"

#ifndef QKV_FIXTURE_DIR
#error "QKV_FIXTURE_DIR must name tests/fixtures/attention (a compile definition)"
#endif

namespace qkv::attention::testing {
namespace {

using autograd::Variable;

std::string fixture_path(const std::string& name) {
  return std::string(QKV_FIXTURE_DIR) + "/" + name + ".txt";
}

// Relative tolerance per precision; the absolute floor scales with the tensor's largest
// golden magnitude (entries near zero come from cancellations of larger terms).
double tolerance(DType dtype) {
  return dtype == DType::F64 ? 1e-10 : 1e-5;
}

std::vector<double> values_of(const Tensor& t) {
  return t.contiguous().to(DType::F64).to_vector<double>();
}

::testing::AssertionResult close_to_golden(const Tensor& actual, const Tensor& golden,
                                           double rtol) {
  if (!actual.defined()) {
    // An undefined gradient stands for zeros.
    for (double g : values_of(golden))
      if (g != 0.0) return ::testing::AssertionFailure() << "undefined, golden has " << g;
    return ::testing::AssertionSuccess();
  }
  if (!(actual.shape() == golden.shape()))
    return ::testing::AssertionFailure()
           << "shape " << actual.shape() << " vs golden " << golden.shape();
  const std::vector<double> a = values_of(actual), g = values_of(golden);
  double scale = 1.0;
  for (double x : g)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  const double atol = rtol * scale;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == g[i]) continue;
    if (!(std::abs(a[i] - g[i]) <= atol + rtol * std::abs(g[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs golden " << g[i] << " (diff " << a[i] - g[i]
             << ", tolerance " << atol + rtol * std::abs(g[i]) << ")";
  }
  return ::testing::AssertionSuccess();
}

// The fixture file, its tensors, and typed accessors.
struct Golden {
  std::string path;
  Fixture tensors;

  explicit Golden(const std::string& name)
      : path(fixture_path(name)), tensors(load_fixture(path)) {}
  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  const Tensor& operator[](const std::string& name) const {
    return fixture_tensor(tensors, name, path);
  }
  // A leaf variable holding the tensor converted to `dtype`.
  Variable var(const std::string& name, DType dtype, bool requires_grad = true) const {
    return Variable((*this)[name].to(dtype), requires_grad);
  }
  MaskSpec mask(DType dtype) const {
    MaskSpec m;
    if (has("key_lengths"))
      for (double x : values_of((*this)["key_lengths"])) m.key_lengths.push_back(int64_t(x));
    m.causal = has("causal") && values_of((*this)["causal"])[0] != 0.0;
    if (has("bias")) m.bias = (*this)["bias"].to(dtype);
    return m;
  }
};

Variable loss_of(const Variable& output, const Golden& g, DType dtype) {
  return autograd::sum(autograd::mul(output, g.var("R", dtype, false)));
}

std::string dtype_label(DType dtype) {
  return dtype == DType::F64 ? "F64" : "F32";
}

// ---- loader ----------------------------------------------------------------------------

TEST(FixtureLoader, ParsesTensorsScalarsCommentsAndSpecialValues) {
  const std::string text =
      "# a comment\n"
      "\n"
      "  # an indented comment\n"
      "x 2 3 : 1 2 3 4 5 6\r\n"
      "s : -0.5\n"
      "m 3 : inf -inf 1e-300\n"
      "e 0 2 :\n";
  const Fixture f = parse_fixture(text, "snippet");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f.at("x").shape(), (Shape{2, 3}));
  EXPECT_EQ(f.at("x").dtype(), DType::F64);
  EXPECT_EQ(f.at("x").to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.at("s").rank(), 0);
  EXPECT_EQ(f.at("s").to_vector<double>(), (std::vector<double>{-0.5}));
  const std::vector<double> m = f.at("m").to_vector<double>();
  EXPECT_EQ(m[0], HUGE_VAL);
  EXPECT_EQ(m[1], -HUGE_VAL);
  EXPECT_EQ(m[2], 1e-300);
  EXPECT_EQ(f.at("e").numel(), 0);
}

TEST(FixtureLoader, RoundTripsFullPrecision) {
  const Fixture f = parse_fixture("v 2 : 0.1 -2.4779469966888428\n", "snippet");
  EXPECT_EQ(f.at("v").to_vector<double>(), (std::vector<double>{0.1, -2.4779469966888428}));
}

// Runs parse_fixture on `text`, expecting an IoError whose message has every fragment.
::testing::AssertionResult rejects(const std::string& text,
                                   const std::vector<std::string>& fragments) {
  try {
    parse_fixture(text, "bad.txt");
  } catch (const IoError& e) {
    const std::string what = e.what();
    for (const std::string& fr : fragments)
      if (what.find(fr) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << fr << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

TEST(FixtureLoader, MalformedInputNamesFileAndLine) {
  const std::string ok = "# header\nx 2 : 1 2\n";
  EXPECT_TRUE(rejects(ok + "y 2 1 2\n", {"bad.txt:3", "no ':'"}));
  EXPECT_TRUE(rejects(ok + "y 2 x : 1 2\n", {"bad.txt:3", "bad dimension 'x'"}));
  EXPECT_TRUE(rejects(ok + "y -2 : 1 2\n", {"bad.txt:3", "bad dimension '-2'"}));
  EXPECT_TRUE(rejects(ok + "y 2 2 : 1 2 3\n", {"bad.txt:3", "'y'", "needs 4 values, found 3"}));
  EXPECT_TRUE(rejects(ok + "y 3 : 1 2.5.1 3\n", {"bad.txt:3", "bad value '2.5.1'", "index 1"}));
  EXPECT_TRUE(rejects(ok + "y 1 : 0x1p3\n", {"bad.txt:3", "bad value"}));
  EXPECT_TRUE(rejects(ok + " : 1\n", {"bad.txt:3", "missing tensor name"}));
  EXPECT_TRUE(rejects(ok + "\nx 1 : 3\n", {"bad.txt:4", "duplicate tensor 'x'"}));
}

TEST(FixtureLoader, MissingFileAndMissingTensorRaiseIoError) {
  EXPECT_THROW(load_fixture(fixture_path("no_such_fixture")), IoError);
  const Fixture f = parse_fixture("x : 1\n", "snippet");
  try {
    fixture_tensor(f, "y", "snippet");
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
  }
}

// The goldens themselves, recomputed from plain autograd ops (independent of
// qkv::attention): checks the file format, the loss convention and the key-padding
// convention end to end.
TEST(FixtureLoader, ScaledDotGoldenMatchesComposedOps) {
  const Golden g("scaled_dot_key_padding");
  const Variable q = g.var("q", DType::F64), k = g.var("k", DType::F64), v = g.var("v", DType::F64);
  const int64_t B = q.value().dim(0), Tq = q.value().dim(1), D = q.value().dim(2);
  std::vector<int64_t> lengths;  // one per (b, i) row of the scores
  for (double x : values_of(g["key_lengths"]))
    for (int64_t i = 0; i < Tq; ++i) lengths.push_back(int64_t(x));
  ASSERT_EQ(int64_t(lengths.size()), B * Tq);
  ops::SoftmaxMask mask;
  mask.valid_lengths = lengths;
  const Variable scores = autograd::scale(autograd::matmul(q, k, ops::MatmulOptions{false, true}),
                                          1.0 / std::sqrt(double(D)));
  const Variable w = autograd::softmax(scores, mask);
  const Variable context = autograd::matmul(w, v);
  autograd::backward(loss_of(context, g, DType::F64));
  EXPECT_TRUE(close_to_golden(w.value(), g["weights"], 1e-12));
  EXPECT_TRUE(close_to_golden(context.value(), g["context"], 1e-12));
  EXPECT_TRUE(close_to_golden(q.grad(), g["grad_q"], 1e-12));
  EXPECT_TRUE(close_to_golden(k.grad(), g["grad_k"], 1e-12));
  EXPECT_TRUE(close_to_golden(v.grad(), g["grad_v"], 1e-12));
}

// ---- attend(): scaled-dot, additive, general -------------------------------------------

struct ScoreCase {
  const char* file;
  ScoreKind kind;
};

void PrintTo(const ScoreCase& c, std::ostream* os) {
  *os << c.file;
}

class AttendFixture : public ::testing::TestWithParam<std::tuple<ScoreCase, DType>> {};

TEST_P(AttendFixture, ForwardAndGradientsMatchPyTorch) {
  const auto [c, dtype] = GetParam();
  const double tol = tolerance(dtype);
  autograd::clear_tape();
  const Golden g(c.file);
  const Variable q = g.var("q", dtype), k = g.var("k", dtype), v = g.var("v", dtype);
  ScoreParams params;
  std::vector<std::pair<std::string, Variable>> param_vars;
  if (c.kind == ScoreKind::General || c.kind == ScoreKind::Additive) {
    params.w = g.var("param_w", dtype);
    param_vars.emplace_back("param_w", params.w);
  }
  if (c.kind == ScoreKind::Additive) {
    params.u = g.var("param_u", dtype);
    params.b = g.var("param_b", dtype);
    params.v = g.var("param_v", dtype);
    param_vars.emplace_back("param_u", params.u);
    param_vars.emplace_back("param_b", params.b);
    param_vars.emplace_back("param_v", params.v);
  }
  AttentionOptions options;
  options.kind = c.kind;
  options.need_weights = true;

  const AttentionOutput out = attend(q, k, v, g.mask(dtype), params, options);
  ASSERT_TRUE(out.context.defined());
  ASSERT_TRUE(out.weights.defined());
  EXPECT_EQ(out.context.value().dtype(), dtype);
  EXPECT_TRUE(close_to_golden(out.context.value(), g["context"], tol)) << "context";
  EXPECT_TRUE(close_to_golden(out.weights.value(), g["weights"], tol)) << "weights";

  autograd::backward(loss_of(out.context, g, dtype));
  EXPECT_TRUE(close_to_golden(q.grad(), g["grad_q"], tol)) << "grad_q";
  EXPECT_TRUE(close_to_golden(k.grad(), g["grad_k"], tol)) << "grad_k";
  EXPECT_TRUE(close_to_golden(v.grad(), g["grad_v"], tol)) << "grad_v";
  for (const auto& [name, var] : param_vars)
    EXPECT_TRUE(close_to_golden(var.grad(), g["grad_" + name], tol)) << "grad_" << name;

  // need_weights = false: same context, no weights.
  autograd::NoGradGuard no_grad;
  options.need_weights = false;
  const AttentionOutput plain = attend(q, k, v, g.mask(dtype), params, options);
  EXPECT_FALSE(plain.weights.defined());
  EXPECT_TRUE(close_to_golden(plain.context.value(), g["context"], tol)) << "context (no weights)";
}

const ScoreCase kScoreCases[] = {
    {"scaled_dot_plain", ScoreKind::ScaledDot},
    {"scaled_dot_key_padding", ScoreKind::ScaledDot},
    {"scaled_dot_causal", ScoreKind::ScaledDot},
    {"scaled_dot_causal_square", ScoreKind::ScaledDot},
    {"scaled_dot_bias", ScoreKind::ScaledDot},
    {"scaled_dot_bias_batched_combined", ScoreKind::ScaledDot},
    {"scaled_dot_decoder_step", ScoreKind::ScaledDot},
    {"scaled_dot_empty_row", ScoreKind::ScaledDot},
    {"additive_key_padding", ScoreKind::Additive},
    {"additive_decoder_step", ScoreKind::Additive},
    {"general_key_padding", ScoreKind::General},
    {"general_decoder_step", ScoreKind::General},
};

std::string score_case_name(
    const ::testing::TestParamInfo<std::tuple<ScoreCase, DType>>& param_info) {
  return std::string(std::get<0>(param_info.param).file) + "_" +
         dtype_label(std::get<1>(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(PyTorch, AttendFixture,
                         ::testing::Combine(::testing::ValuesIn(kScoreCases),
                                            ::testing::Values(DType::F64, DType::F32)),
                         score_case_name);

// ---- MultiHeadAttention vs nn.MultiheadAttention ---------------------------------------

class MultiHeadFixture : public ::testing::TestWithParam<std::tuple<const char*, DType>> {};

TEST_P(MultiHeadFixture, ForwardAndGradientsMatchPyTorch) {
  const auto [file, dtype] = GetParam();
  const double tol = tolerance(dtype);
  autograd::clear_tape();
  const Golden g(file);
  const bool self_attention = g.has("x");
  Variable query, key, value;
  if (self_attention) {
    query = key = value = g.var("x", dtype);
  } else {
    query = g.var("query", dtype);
    key = g.var("key", dtype);
    value = g.var("value", dtype);
  }
  MultiHeadParams p;
  const std::vector<std::pair<std::string, Variable*>> named = {
      {"wq", &p.wq}, {"wk", &p.wk}, {"wv", &p.wv}, {"wo", &p.wo},
      {"bq", &p.bq}, {"bk", &p.bk}, {"bv", &p.bv}, {"bo", &p.bo}};
  for (const auto& [name, var] : named) *var = g.var(name, dtype);
  const int64_t heads = int64_t(values_of(g["heads"])[0]);
  const MultiHeadAttention mha(p, heads);
  EXPECT_EQ(mha.heads(), heads);
  const MaskSpec mask = g.mask(dtype);

  MultiHeadOptions options;
  options.need_weights = true;
  options.head_weights = HeadWeights::Averaged;
  const MultiHeadOutput out = mha.forward(query, key, value, mask, options);
  ASSERT_TRUE(out.output.defined());
  EXPECT_TRUE(close_to_golden(out.output.value(), g["output"], tol)) << "output";
  ASSERT_TRUE(out.weights.defined());
  EXPECT_TRUE(close_to_golden(out.weights.value(), g["weights_avg"], tol)) << "weights_avg";

  autograd::backward(loss_of(out.output, g, dtype));
  if (self_attention) {
    EXPECT_TRUE(close_to_golden(query.grad(), g["grad_x"], tol)) << "grad_x";
  } else {
    EXPECT_TRUE(close_to_golden(query.grad(), g["grad_query"], tol)) << "grad_query";
    EXPECT_TRUE(close_to_golden(key.grad(), g["grad_key"], tol)) << "grad_key";
    EXPECT_TRUE(close_to_golden(value.grad(), g["grad_value"], tol)) << "grad_value";
  }
  for (const auto& [name, var] : named)
    EXPECT_TRUE(close_to_golden(var->grad(), g["grad_" + name], tol)) << "grad_" << name;

  autograd::NoGradGuard no_grad;
  options.head_weights = HeadWeights::PerHead;
  const MultiHeadOutput per_head = mha.forward(query, key, value, mask, options);
  EXPECT_TRUE(close_to_golden(per_head.output.value(), g["output"], tol)) << "output (per head)";
  ASSERT_TRUE(per_head.weights.defined());
  EXPECT_TRUE(close_to_golden(per_head.weights.value(), g["weights_per_head"], tol))
      << "weights_per_head";

  const MultiHeadOutput no_weights = mha.forward(query, key, value, mask);
  EXPECT_FALSE(no_weights.weights.defined());
  EXPECT_TRUE(close_to_golden(no_weights.output.value(), g["output"], tol))
      << "output (no weights)";
}

std::string multi_head_case_name(
    const ::testing::TestParamInfo<std::tuple<const char*, DType>>& param_info) {
  return std::string(std::get<0>(param_info.param)) + "_" +
         dtype_label(std::get<1>(param_info.param));
}

INSTANTIATE_TEST_SUITE_P(PyTorch, MultiHeadFixture,
                         ::testing::Combine(::testing::Values("mha_plain", "mha_key_padding",
                                                              "mha_decoder_step",
                                                              "mha_causal_self"),
                                            ::testing::Values(DType::F64, DType::F32)),
                         multi_head_case_name);

}  // namespace
}  // namespace qkv::attention::testing
