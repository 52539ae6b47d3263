// The parameter store: one contiguous value arena and one gradient arena that the
// parameters' Variables view, names, initialisation and tying.
#include "qkv/nn/parameters.h"

#include <cmath>

#include "qkv/autograd/functions.h"
#include "qkv/nn/embedding.h"
#include "qkv/nn/layer_norm.h"
#include "qkv/nn/linear.h"
#include "qkv/ops/elementwise.h"
#include "qkv/testing/tensors.h"

namespace qkv::nn {
namespace {

using autograd::Variable;
using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;
using qkv::testing::throws_with;

// Every parameter's value and gradient are its slices of the two arenas, back to back in
// registration order.
void expect_views_line_up(const ParameterStore& store) {
  const Tensor values = store.values(), grads = store.grads();
  ASSERT_EQ(values.shape(), Shape{store.numel()});
  ASSERT_EQ(grads.shape(), Shape{store.numel()});
  int64_t next = 0;
  for (const Parameter& p : store.parameters()) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.offset, next);
    const auto elem = int64_t(dtype_size(store.dtype()));
    EXPECT_EQ(static_cast<const char*>(p.variable.value().view().raw_data()),
              static_cast<const char*>(values.view().raw_data()) + p.offset * elem);
    EXPECT_EQ(static_cast<const char*>(p.variable.grad().view().raw_data()),
              static_cast<const char*>(grads.view().raw_data()) + p.offset * elem);
    EXPECT_TRUE(p.variable.value().is_contiguous());
    EXPECT_TRUE(p.variable.has_bound_grad());
    EXPECT_TRUE(p.variable.requires_grad());
    next += p.variable.value().numel();
  }
  EXPECT_EQ(next, store.numel());
}

TEST(ParameterStore, ValuesAndGradsAreOneContiguousBufferEach) {
  ParameterStore store(1);
  const Linear a(store, "encoder.layer0.ff.linear1", 3, 4);
  const LayerNorm norm(store, "encoder.layer0.norm", 4);
  const Embedding emb(store, "decoder.embedding", 7, 4);
  EXPECT_EQ(store.size(), 5u);
  EXPECT_EQ(store.numel(), 3 * 4 + 4 + 4 + 4 + 7 * 4);
  expect_views_line_up(store);
}

// Registering past the capacity moves everything into bigger arenas: values survive and
// the Variables the layers hold follow.
TEST(ParameterStore, GrowingTheArenaRebindsEveryParameter) {
  ParameterStore store(2);
  const Linear first(store, "first", 5, 3);
  const Tensor before = first.weight().value().clone();
  for (int i = 0; i < 6; ++i) Linear(store, "big" + std::to_string(i), 40, 30);  // > 1024
  EXPECT_GT(store.numel(), 4 * 1024);
  expect_views_line_up(store);
  EXPECT_TRUE(bitwise_equal(first.weight().value(), before));
  EXPECT_TRUE(first.weight().same_as(store.get("first.weight")));
}

TEST(ParameterStore, BackwardAccumulatesIntoTheGradientArena) {
  ParameterStore store(3, DType::F64);
  const Linear lin(store, "proj", 3, 2);
  const Variable x(random_tensor({4, 3}, DType::F64, 5));
  for (int pass = 0; pass < 2; ++pass) autograd::backward(autograd::sum(lin.forward(x)));
  // d/dW Σ (x Wᵀ + b) = 2 · 1ᵀx per row of W (two passes), d/db = 2 · rows.
  const Tensor grads = store.grads();
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < 3; ++i) {
      double col = 0;
      for (int64_t r = 0; r < 4; ++r) col += x.value().at<double>({r, i});
      EXPECT_NEAR(grads.data<double>()[o * 3 + i], 2 * col, 1e-12);
    }
  EXPECT_EQ(grads.data<double>()[6], 8.0);
  EXPECT_EQ(grads.data<double>()[7], 8.0);
  store.zero_grad();
  for (double g : store.grads().to_vector<double>()) EXPECT_EQ(g, 0.0);
  expect_views_line_up(store);  // zero_grad keeps the binding
}

TEST(ParameterStore, NamesLookupAndRegistrationOrder) {
  ParameterStore store;
  const Variable w = store.add("encoder.layer0.attn.q_proj.weight", {2, 2}, xavier_uniform_init());
  store.add("encoder.layer0.attn.q_proj.bias", {2}, zeros_init());
  store.add("a", {1}, ones_init());
  EXPECT_TRUE(store.get("encoder.layer0.attn.q_proj.weight").same_as(w));
  EXPECT_TRUE(store.contains("a"));
  EXPECT_FALSE(store.contains("b"));
  std::vector<std::string> names;
  for (const Parameter& p : store.parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"encoder.layer0.attn.q_proj.weight",
                                             "encoder.layer0.attn.q_proj.bias", "a"}));
  EXPECT_EQ(child_name("enc", "w"), "enc.w");
  EXPECT_EQ(child_name("", "w"), "w");
}

TEST(ParameterStore, BadNamesAndInitsAreConfigErrors) {
  ParameterStore store;
  store.add("x.w", {2}, zeros_init());
  EXPECT_TRUE(throws_with<ConfigError>([&] { store.add("x.w", {2}, zeros_init()); },
                                       {"x.w", "registered twice"}));
  for (const char* bad : {"", "a..b", ".a", "a.", "a b", "a/b"})
    EXPECT_TRUE(
        throws_with<ConfigError>([&] { store.add(bad, {1}, zeros_init()); }, {"parameter name"}))
        << bad;
  EXPECT_TRUE(throws_with<ConfigError>([&] { store.get("nope.weight"); }, {"nope.weight"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { store.add("v", {3}, xavier_uniform_init()); },
                                       {"v", "Xavier"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] {
        store.add("g", {6, 2}, xavier_uniform_init(4));
      },
      {"blocks = 4"}));
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { store.add("n", {3}, normal_init(-1.0)); }, {"scale -1"}));
  EXPECT_EQ(store.size(), 1u);
}

// Xavier: within ±sqrt(6 / (fan_in + fan_out)), variance bound²/3. With 65536 draws the
// sample variance's relative standard deviation is sqrt(0.8/65536) ~ 0.35%, so 3% is ~9
// sigma; the same for the normal init's std (0.28%).
TEST(ParameterStore, InitialisationFollowsTheSpec) {
  ParameterStore store(7, DType::F64);
  const Variable w = store.add("w", {256, 256}, xavier_uniform_init());
  const Variable gates = store.add("g", {3 * 64, 32}, xavier_uniform_init(3));
  const Variable e = store.add("e", {256, 256}, normal_init(0.125));
  const Variable b = store.add("b", {5}, zeros_init());
  const Variable one = store.add("one", {5}, ones_init());
  const Variable u = store.add("u", {100}, uniform_init(0.5));
  auto moments = [](const Variable& v) {
    double s = 0, ss = 0;
    for (double x : v.value().to_vector<double>()) s += x, ss += x * x;
    const double n = double(v.value().numel());
    return std::pair{s / n, ss / n};
  };
  const double bound = std::sqrt(6.0 / 512);
  for (double x : w.value().to_vector<double>()) ASSERT_LE(std::abs(x), bound);
  EXPECT_NEAR(moments(w).second, bound * bound / 3, 0.03 * bound * bound / 3);
  EXPECT_NEAR(moments(w).first, 0.0, 0.01 * bound);
  const double gate_bound = std::sqrt(6.0 / (64 + 32));  // per gate block, not 192 + 32
  double gate_max = 0;
  for (double x : gates.value().to_vector<double>()) gate_max = std::max(gate_max, std::abs(x));
  EXPECT_LE(gate_max, gate_bound);
  EXPECT_GT(gate_max, 0.9 * gate_bound);
  EXPECT_NEAR(std::sqrt(moments(e).second), 0.125, 0.03 * 0.125);
  for (double x : b.value().to_vector<double>()) EXPECT_EQ(x, 0.0);
  for (double x : one.value().to_vector<double>()) EXPECT_EQ(x, 1.0);
  for (double x : u.value().to_vector<double>()) EXPECT_LE(std::abs(x), 0.5);
}

// Values depend on (seed, name) only: not on the order of registration.
TEST(ParameterStore, InitialisationIsSeededPerName) {
  ParameterStore one(11), two(11), other(12);
  one.add("a", {4, 3}, xavier_uniform_init());
  const Variable b1 = one.add("b", {4, 3}, xavier_uniform_init());
  const Variable b2 = two.add("b", {4, 3}, xavier_uniform_init());
  const Variable b3 = other.add("b", {4, 3}, xavier_uniform_init());
  EXPECT_TRUE(bitwise_equal(b1.value(), b2.value()));
  EXPECT_FALSE(bitwise_equal(b1.value(), b3.value()));
  EXPECT_FALSE(bitwise_equal(b1.value(), one.get("a").value()));
}

// A tied output projection: the Linear's weight IS the embedding table (stored once), and
// its gradient is the sum of both uses' gradients.
TEST(ParameterStore, TyingSharesStorageAndSumsGradients) {
  ParameterStore store(5, DType::F64);
  const Embedding emb(store, "decoder.embedding", 6, 4);
  store.tie("decoder.output.weight", "decoder.embedding.weight");
  const Linear out(store, "decoder.output", 4, 6, /*bias=*/false);
  EXPECT_TRUE(out.weight().same_as(emb.weight()));
  EXPECT_TRUE(store.get("decoder.output.weight").same_as(emb.weight()));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.numel(), 24);
  ASSERT_EQ(store.aliases().size(), 1u);
  EXPECT_EQ(store.aliases()[0].second, "decoder.embedding.weight");

  const Tensor ids = Tensor::from(Shape{3}, std::vector<double>{1, 4, 1});
  const Variable h(random_tensor({2, 4}, DType::F64, 9));
  const Variable wl(random_tensor({2, 6}, DType::F64, 10));
  const Variable we(random_tensor({3, 4}, DType::F64, 11));
  auto embed_loss = [&] { return autograd::sum(autograd::mul(emb.forward(ids), we)); };
  auto project_loss = [&] { return autograd::sum(autograd::mul(out.forward(h), wl)); };
  autograd::backward(embed_loss());
  const Tensor g_embed = store.grads().clone();
  store.zero_grad();
  autograd::backward(project_loss());
  const Tensor g_project = store.grads().clone();
  store.zero_grad();
  autograd::backward(autograd::add(embed_loss(), project_loss()));
  EXPECT_TRUE(qkv::testing::all_close(store.grads(), ops::add(g_embed, g_project), 1e-14, 0));
  EXPECT_GT(std::abs(g_embed.data<double>()[4]), 0.0);  // row 1 of the table: used twice
}

TEST(ParameterStore, TyingErrors) {
  ParameterStore store;
  store.add("emb.weight", {4, 2}, normal_init(0.5));
  EXPECT_TRUE(throws_with<ConfigError>([&] { store.tie("out.weight", "missing.weight"); },
                                       {"missing.weight", "not registered"}));
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { store.tie("emb.weight", "emb.weight"); }, {"already names"}));
  store.tie("out.weight", "emb.weight");
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        store.add("out.weight", {2, 4}, zeros_init());
      },
      {"out.weight", "emb.weight", "shapes differ"}));
}

}  // namespace
}  // namespace qkv::nn
