// Bad input to every public op raises a typed qkv::Error whose message names the shapes
// or values at fault -- never an abort, never a silent wrong answer.
#include <cmath>
#include <limits>

#include "qkv/ops/activation.h"
#include "qkv/ops/broadcast.h"
#include "qkv/ops/cross_entropy.h"
#include "qkv/ops/dropout.h"
#include "qkv/ops/elementwise.h"
#include "qkv/ops/embedding.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/ops/flash_attention_rows.h"
#include "qkv/ops/layer_norm.h"
#include "qkv/ops/matmul.h"
#include "qkv/ops/normalize.h"
#include "qkv/ops/reduce.h"
#include "qkv/ops/shape_ops.h"
#include "qkv/ops/softmax.h"
#include "qkv/testing/tensors.h"

namespace qkv::testing {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const Shape& s) {
  return random_tensor(s, DType::F64, 7);
}
Tensor f32(const Shape& s) {
  return random_tensor(s, DType::F32, 7);
}
Tensor ids_of(std::vector<double> v) {
  return Tensor::from(Shape{int64_t(v.size())}, v);
}

TEST(BadInput, Matmul) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::matmul(f64({2, 3}), f64({4, 5}));
      },
      {"f64[2, 3]", "f64[4, 5]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::matmul(f64({3}), f64({3, 2})); }, {"f64[3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::matmul(f64({2, 2, 3}), f64({3, 3, 4}));
      },
      {"batch", "f64[2, 2, 3]", "f64[3, 3, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::matmul(f64({0, 3}), f64({3, 4})); }, {"empty"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        ops::matmul(f64({2, 3}), f32({3, 4}));
      },
      {"f64[2, 3]", "f32[3, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::matmul_backward(f64({2, 5}), f64({2, 3}), f64({3, 4}));
      },
      {"f64[2, 5]"}));
}

TEST(BadInput, ElementwiseArithmetic) {
  for (auto op : {ops::add, ops::sub, ops::mul}) {
    EXPECT_TRUE(throws_with<ShapeError>(
        [op] {
          op(f64({2, 3}), f64({3, 2}));
        },
        {"f64[2, 3]", "f64[3, 2]"}));
    EXPECT_TRUE(throws_with<ValueError>([op] { op(f64({2, 3}), f32({2, 3})); }, {"mixed dtypes"}));
  }
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::mul_backward(f64({2}), f64({3}), f64({3})); },
                                      {"f64[2]", "f64[3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { ops::scale(f64({2}), kNaN); }, {"nan"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::add_bias(f64({2, 3}), f64({4}));
      },
      {"f64[4]", "f64[2, 3]"}));
  EXPECT_TRUE(throws_with<ValueError>([] { ops::add_bias(f64({2, 3}), f32({3})); }, {"mixed"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::add_bias(f64({}), f64({1})); }, {"rank"}));
  EXPECT_TRUE(
      throws_with<ShapeError>([] { ops::accumulate_into(f64({2}), f64({3})); }, {"f64[3]"}));
}

TEST(BadInput, Activations) {
  for (auto f : {ops::Activation::Tanh, ops::Activation::Sigmoid, ops::Activation::Relu,
                 ops::Activation::Gelu}) {
    EXPECT_TRUE(throws_with<ShapeError>(
        [f] {
          ops::activation_backward(f, f64({2, 3}), f64({3, 2}), f64({3, 2}));
        },
        {ops::activation_name(f), "f64[2, 3]", "f64[3, 2]"}));
    EXPECT_TRUE(throws_with<ValueError>(
        [f] { ops::activation_backward(f, f32({2}), f64({2}), f64({2})); }, {"mixed"}));
  }
}

TEST(BadInput, Reductions) {
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::mean(f64({0, 3})); }, {"mean", "empty"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::sum_last(f64({})); }, {"sum_last", "rank"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::sum_backward(f64({2}), Shape{2, 3});
      },
      {"one element"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::mean_backward(f64({}), Shape{0}); }, {"empty"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::sum_last_backward(f64({3}), Shape{2, 3});
      },
      {"f64[3]", "[2, 3]"}));
}

TEST(BadInput, SoftmaxAndLogSoftmax) {
  for (bool log : {false, true}) {
    auto run = [log](const TensorView& x, const ops::SoftmaxMask& m) {
      return log ? ops::log_softmax(x, m) : ops::softmax(x, m);
    };
    EXPECT_TRUE(throws_with<ShapeError>([&] { run(f64({2, 0}), {}); }, {"empty"}));
    EXPECT_TRUE(throws_with<ShapeError>([&] { run(f64({}), {}); }, {"rank"}));
    const std::vector<int64_t> three{1, 2, 3}, bad{1, 7};
    EXPECT_TRUE(throws_with<ShapeError>(
        [&] {
          run(f64({2, 4}), {three, {}});
        },
        {"3 valid lengths", "f64[2, 4]"}));
    EXPECT_TRUE(throws_with<ValueError>(
        [&] {
          run(f64({2, 4}), {bad, {}});
        },
        {"valid length 7", "row 1"}));
    const Tensor bias3 = f64({3}), bias32 = f32({4});
    EXPECT_TRUE(throws_with<ShapeError>(
        [&] {
          run(f64({2, 4}), {{}, bias3});
        },
        {"f64[3]", "f64[2, 4]"}));
    EXPECT_TRUE(throws_with<ValueError>([&] { run(f64({2, 4}), {{}, bias32}); }, {"mixed"}));
  }
  {
    Tensor empty = f64({2, 0}), scalar = f64({}), undefined;
    Tensor strided = f64({4, 3}).transpose(0, 1);
    EXPECT_TRUE(throws_with<ShapeError>([&] { ops::log_softmax_in_place(empty); }, {"empty"}));
    EXPECT_TRUE(throws_with<ShapeError>([&] { ops::log_softmax_in_place(scalar); }, {"rank"}));
    EXPECT_TRUE(
        throws_with<ValueError>([&] { ops::log_softmax_in_place(undefined); }, {"undefined"}));
    EXPECT_TRUE(
        throws_with<ShapeError>([&] { ops::log_softmax_in_place(strided); }, {"not contiguous"}));
  }
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::softmax_backward(f64({2, 3}), f64({3, 2}));
      },
      {"f64[2, 3]", "f64[3, 2]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::log_softmax_backward(f64({2, 3}), f64({3, 2}));
      },
      {"f64[2, 3]", "f64[3, 2]"}));
}

TEST(BadInput, FlashAttention) {
  const Tensor q = f64({2, 3, 4}), k = f64({2, 5, 4}), v = f64({2, 5, 6});
  auto run = [](const TensorView& a, const TensorView& b, const TensorView& c,
                const ops::FlashAttentionOptions& o = {}) { ops::flash_attention(a, b, c, o); };
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(f64({3, 4}), k, v); }, {"f64[3, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(f64({2, 0, 4}), k, v); }, {"empty"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(q, f64({2, 5, 3}), v); }, {"f64[2, 5, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(q, k, f64({2, 4, 6})); }, {"f64[2, 4, 6]"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(q, f64({1, 5, 4}), v); }, {"f64[1, 5, 4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { run(q, f32({2, 5, 4}), v); }, {"mixed"}));
  const std::vector<int64_t> three{1, 2, 3}, bad{1, 6};
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        run(q, k, v, {1.0, false, three});
      },
      {"3 key lengths"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        run(q, k, v, {1.0, false, bad});
      },
      {"key length 6", "batch 1"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { run(q, k, v, {kNaN}); }, {"scale"}));
  // key_rows: one per query row, each a row of k; then k may hold any number of rows.
  const std::vector<int64_t> one_row{0}, rows_out{0, 2}, shared{1, 1};
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(q, k, v, {.key_rows = one_row}); },
                                      {"1 key rows", "batch 2"}));
  EXPECT_TRUE(throws_with<IndexError>([&] { run(q, k, v, {.key_rows = rows_out}); },
                                      {"key_rows[1] = 2", "f64[2, 5, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        run(q, f64({3, 5, 4}), f64({2, 5, 6}), {.key_rows = shared});
      },
      {"f64[3, 5, 4]"}));
  EXPECT_NO_THROW(run(q, f64({3, 5, 4}), f64({3, 5, 6}), {.key_rows = shared}));
  const ops::FlashAttentionResult r = ops::flash_attention(q, k, v);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { ops::flash_attention_backward(r.out, q, k, v, r.out, r.lse, {.key_rows = shared}); },
      {"key_rows is forward-only"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_backward(f64({2, 3, 5}), q, k, v, r.out, r.lse);
      },
      {"dout", "f64[2, 3, 5]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_backward(r.out, q, k, v, r.out, f64({2, 4}));
      },
      {"lse", "f64[2, 4]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { run(q, k, v, {.keep_probs_up_to_bytes = -1}); },
                                      {"keep_probs_up_to_bytes -1"}));
  // Kept probabilities that are not forward's: F64 keeps none, and a wrong size.
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] { ops::flash_attention_backward(r.out, q, k, v, r.out, r.lse, {}, f32({10})); },
      {"probs f32[10]", "flash_attention keeps"}));
  const Tensor q32 = f32({2, 3, 4}), k32 = f32({2, 5, 4}), v32 = f32({2, 5, 6});
  const ops::FlashAttentionResult r32 =
      ops::flash_attention(q32, k32, v32, {.keep_probs_up_to_bytes = int64_t(1) << 20});
  ASSERT_TRUE(r32.probs.defined());
  EXPECT_NO_THROW(
      ops::flash_attention_backward(r32.out, q32, k32, v32, r32.out, r32.lse, {}, r32.probs));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_backward(r32.out, q32, k32, v32, r32.out, r32.lse, {}, f32({9}));
      },
      {"probs f32[9]", "F32 [", "flash_attention keeps"}));
}

TEST(BadInput, LayerNorm) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::layer_norm(f64({2, 4}), f64({3}), f64({3}));
      },
      {"gamma", "f64[3]", "f64[2, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::layer_norm(f64({2, 4}), f64({4}), f64({2}));
      },
      {"beta", "f64[2]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::layer_norm(f64({0, 4}), f64({4}), f64({4}));
      },
      {"empty"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        ops::layer_norm(f64({2, 4}), f32({4}), f64({4}));
      },
      {"mixed"}));
  for (double eps : {0.0, -1.0, kNaN})
    EXPECT_TRUE(throws_with<ValueError>(
        [eps] {
          ops::layer_norm(f64({2, 4}), f64({4}), f64({4}), eps);
        },
        {"eps"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::layer_norm_backward(f64({2, 4}), f64({2, 4}), f64({4}), f64({3}), f64({2}));
      },
      {"f64[3]"}));
}

TEST(BadInput, Embedding) {
  const Tensor table = f64({5, 3});
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::embedding(table, ids_of({1, kNaN, 2}));
      },
      {"id nan", "position 1"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { ops::embedding(table, ids_of({1.5})); },
                                      {"id 1.5", "not an integer"}));
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        ops::embedding(table, ids_of({0, 1, -2}));
      },
      {"id -2", "position 2", "[0, 5)"}));
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        ops::embedding(table, Tensor::from(Shape{2, 2}, std::vector<double>{0, 1, 2, 5}));
      },
      {"id 5", "position 3", "index [1, 1]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::embedding(table,
                       Tensor::full({1}, std::numeric_limits<double>::infinity(), DType::F64));
      },
      {"inf"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::embedding(f64({5}), ids_of({0})); }, {"[V, E]"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::embedding(f64({0, 3}), ids_of({0})); }, {"empty"}));
  EXPECT_TRUE(throws_with<IndexError>(
      [] {
        ops::embedding_backward(f64({1, 3}), ids_of({4}), 3);
      },
      {"id 4"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::embedding_backward(f64({2, 3}), ids_of({1}), 3);
      },
      {"f64[2, 3]", "f64[1]"}));
}

TEST(BadInput, CrossEntropy) {
  const Tensor logits = f64({3, 4});
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::cross_entropy(logits, ids_of({0, 1}));
      },
      {"f64[2]", "f64[3, 4]"}));
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        ops::cross_entropy(logits, ids_of({0, 4, 1}));
      },
      {"target 4", "position 1"}));
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        ops::cross_entropy(logits, ids_of({0, 1, -2}));
      },
      {"target -2"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::cross_entropy(logits, ids_of({kNaN, 1, 2}));
      },
      {"target nan", "position 0"}));
  for (double eps : {1.0, -0.1, kNaN})
    EXPECT_TRUE(throws_with<ValueError>(
        [&] {
          ops::cross_entropy(logits, ids_of({0, 1, 2}), {.label_smoothing = eps});
        },
        {"label_smoothing"}));
  // Targets are indices: either float dtype is accepted; values must not mix dtypes.
  EXPECT_NO_THROW(ops::cross_entropy(logits, ids_of({0, 1, 2}).to(DType::F32)));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::cross_entropy_backward(Tensor::full({}, 1.0, DType::F32), logits, ids_of({0, 1, 2}),
                                    f64({3}));
      },
      {"mixed", "f32[]", "f64[3, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::cross_entropy(f64({3, 0}), ids_of({0, 0, 0}));
      },
      {"empty"}));
  const ops::CrossEntropyResult r = ops::cross_entropy(logits, ids_of({0, 1, 2}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::cross_entropy_backward(f64({2}), logits, ids_of({0, 1, 2}), r.lse);
      },
      {"dloss", "one element"}));
}

TEST(BadInput, Dropout) {
  for (double p : {1.0, -0.1, 1.5, kNaN}) {
    EXPECT_TRUE(throws_with<ValueError>([p] { ops::dropout(f64({4}), {.p = p}); }, {"dropout: p"}));
    EXPECT_TRUE(throws_with<ValueError>([p] { ops::dropout_backward(f64({4}), {.p = p}); },
                                        {"dropout_backward: p"}));
  }
}

TEST(BadInput, L2Normalize) {
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::l2_normalize(f64({2, 0})); }, {"empty"}));
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::l2_normalize(f64({})); }, {"rank"}));
  for (double eps : {0.0, -1.0, kNaN})
    EXPECT_TRUE(throws_with<ValueError>([eps] { ops::l2_normalize(f64({2}), eps); }, {"eps"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::l2_normalize_backward(f64({2, 3}), f64({3, 2}));
      },
      {"f64[2, 3]", "f64[3, 2]"}));
  EXPECT_TRUE(
      throws_with<ValueError>([] { ops::l2_normalize_backward(f32({2}), f64({2})); }, {"mixed"}));
}

TEST(BadInput, PairwiseAdd) {
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::pairwise_add(f64({2, 3, 4}), f64({3, 5, 4}));
      },
      {"f64[2, 3, 4]", "f64[3, 5, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::pairwise_add(f64({2, 3, 4}), f64({2, 5, 3}));
      },
      {"[B, Tk, A]", "f64[2, 5, 3]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::pairwise_add(f64({3, 4}), f64({2, 4}));
      },
      {"f64[3, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::pairwise_add(f64({2, 0, 4}), f64({2, 5, 4}));
      },
      {"empty"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [] {
        ops::pairwise_add(f64({2, 3, 4}), f32({2, 5, 4}));
      },
      {"mixed"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::pairwise_add_backward(f64({2, 3, 4}));
      },
      {"f64[2, 3, 4]"}));
}

TEST(BadInput, UndefinedTensorsAreRejectedNotDereferenced) {
  EXPECT_TRUE(throws_with<ValueError>([] { ops::tanh(Tensor()); }, {"undefined"}));
  EXPECT_TRUE(
      throws_with<ValueError>([] { ops::sum_backward(Tensor(), Shape{2}); }, {"undefined"}));
  EXPECT_TRUE(throws_with<ValueError>([] { ops::dropout(Tensor(), {.p = 0.5}); }, {"undefined"}));
}

TEST(BadInput, ShapeOps) {
  EXPECT_TRUE(throws_with<ShapeError>([] { ops::transpose(f64({2, 3}), 0, 2); }, {"axis 2"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::reshape(f64({2, 3}), Shape{4});
      },
      {"f64[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [] {
        ops::reshape_backward(f64({2, 3}), Shape{5});
      },
      {"[5]"}));
}

TEST(BadInput, FlashAttentionRows) {
  // q, k and v in one [5, 12]: 2 sequences (3, 2 rows), 2 heads of 2 at columns 0, 4, 8.
  const Tensor qkv = f64({5, 12});
  const std::vector<int64_t> lengths{3, 2}, short_lengths{3, 1}, negative{6, -1}, one{5};
  const ops::FlashRows good{.heads = 2,
                            .head_dim = 2,
                            .query_lengths = lengths,
                            .key_lengths = lengths,
                            .q_column = 0,
                            .k_column = 4,
                            .v_column = 8};
  auto run = [&](const ops::FlashRows& r, const ops::FlashAttentionOptions& o = {}) {
    ops::flash_attention_rows(qkv, qkv, qkv, r, o);
  };
  EXPECT_NO_THROW(run(good, {.causal = true}));
  ops::FlashRows r = good;
  r.key_lengths = short_lengths;
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(r); },
                                      {"k f64[5, 12] has 5 rows", "key_lengths sum to 4"}));
  const Tensor kv4 = f64({4, 12});  // keys and values of those lengths
  EXPECT_NO_THROW(ops::flash_attention_rows(qkv, kv4, kv4, r));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { ops::flash_attention_rows(qkv, kv4, kv4, r, {.causal = true}); },
      {"causal", "sequence 1 has 2 and 1"}));
  r = good;
  r.query_lengths = negative;
  EXPECT_TRUE(throws_with<ValueError>([&] { run(r); }, {"rows.query_lengths[1] = -1"}));
  r = good;
  r.query_lengths = one;
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(r); }, {"query_lengths (1)", "key_lengths (2)"}));
  r = good;
  r.v_column = 9;
  EXPECT_TRUE(throws_with<ShapeError>([&] { run(r); }, {"v f64[5, 12]", "columns [9, 13)"}));
  r = good;
  r.heads = 0;
  EXPECT_TRUE(throws_with<ValueError>([&] { run(r); }, {"rows.heads 0"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { run(good, {.key_lengths = lengths}); },
                                      {"options.key_lengths"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_rows(f64({5, 3, 4}), qkv, qkv, good);
      },
      {"q f64[5, 3, 4]", "[N, C]"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        ops::flash_attention_rows(f32({5, 12}), qkv, qkv, good);
      },
      {"f32"}));
  // Backward: outputs shaped as forward's, gradient targets shaped as the inputs.
  const ops::FlashAttentionResult res = ops::flash_attention_rows(qkv, qkv, qkv, good);
  Tensor g = Tensor::empty(qkv.shape(), DType::F64);
  EXPECT_NO_THROW(ops::flash_attention_rows_backward(res.out, qkv, qkv, qkv, res.out, res.lse, good,
                                                     {}, {}, g, g, g));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_rows_backward(f64({5, 3}), qkv, qkv, qkv, res.out, res.lse, good, {},
                                           {}, g, g, g);
      },
      {"dout f64[5, 3]", "[5, 4]"}));
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_rows_backward(res.out, qkv, qkv, qkv, res.out, f64({4, 2}), good, {},
                                           {}, g, g, g);
      },
      {"lse f64[4, 2]", "[4, 3]"}));
  const Tensor narrow = Tensor::empty({5, 11}, DType::F64);
  EXPECT_TRUE(throws_with<ShapeError>(
      [&] {
        ops::flash_attention_rows_backward(res.out, qkv, qkv, qkv, res.out, res.lse, good, {}, {},
                                           g, narrow, g);
      },
      {"dk f64[5, 11]", "shaped as f64[5, 12]"}));
}

}  // namespace
}  // namespace qkv::testing
