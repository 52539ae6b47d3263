#include "op_cases.h"

#include "qkv/ops/activation.h"
#include "qkv/ops/additive_scores.h"
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

using Views = std::vector<TensorView>;
using Outputs = std::vector<Tensor>;

Tensor owned(const TensorView& v) {
  Tensor t = Tensor::empty(v.shape(), v.dtype());
  copy_into(v, t);
  return t;
}

OpCase matmul_case(std::string name, Shape a, Shape b, Shape y, ops::MatmulOptions o) {
  return {std::move(name),
          {{a}, {b}, {y}},
          [o](const Views& in) {
            const ops::MatmulGrads g = ops::matmul_backward(in[2], in[0], in[1], o);
            return Outputs{ops::matmul(in[0], in[1], o), g.da, g.db};
          },
          1e-4,
          1e-4};
}

template <class Fwd, class Bwd>
OpCase binary_case(std::string name, Fwd fwd, Bwd bwd) {
  return {std::move(name), {{{4, 9}}, {{4, 9}}, {{4, 9}}}, [fwd, bwd](const Views& in) {
            const ops::BinaryGrads g = bwd(in);
            return Outputs{fwd(in[0], in[1]), g.da, g.db};
          }};
}

OpCase activation_case(ops::Activation f) {
  return {ops::activation_name(f), {{{4, 7}}, {{4, 7}}}, [f](const Views& in) {
            Tensor y = ops::activation(f, in[0]);
            return Outputs{y, ops::activation_backward(f, in[1], in[0], y)};
          }};
}

OpCase softmax_case(std::string name, bool log, bool masked) {
  return {std::move(name), {{{3, 4, 9}}, {{3, 4, 9}}, {{9}}}, [log, masked](const Views& in) {
            static const std::vector<int64_t> lengths{9, 1, 5, 0, 7, 3, 9, 2, 4, 6, 8, 9};
            ops::SoftmaxMask mask;
            if (masked) mask = {lengths, in[2]};
            Tensor y = log ? ops::log_softmax(in[0], mask) : ops::softmax(in[0], mask);
            Tensor dx = log ? ops::log_softmax_backward(in[1], y) : ops::softmax_backward(in[1], y);
            return Outputs{y, dx};
          }};
}

// Fused attention: q, k, v, dout -> out, lse, dq, dk, dv. Masked (causal + key
// lengths) cases keep every query row with at least one visible key. keep: the F32
// forward keeps the probabilities and the backward reads them (F64 always recomputes).
OpCase flash_attention_case(std::string name, Shape q, Shape k, Shape v, Shape out, bool masked,
                            bool keep = false) {
  return {std::move(name), {{q}, {k}, {v}, {out}}, [masked, keep](const Views& in) {
            static const std::vector<int64_t> lengths{4, 2};
            ops::FlashAttentionOptions o{0.7, masked, {}};
            if (masked) o.key_lengths = lengths;
            if (keep) o.keep_probs_up_to_bytes = ops::kFlashKeepProbsBytes;
            ops::FlashAttentionResult r = ops::flash_attention(in[0], in[1], in[2], o);
            EXPECT_EQ(r.probs.defined(), keep && in[0].dtype() == DType::F32);
            ops::FlashAttentionGradients g =
                ops::flash_attention_backward(in[3], in[0], in[1], in[2], r.out, r.lse, o,
                                              r.probs.defined() ? r.probs.view() : TensorView());
            return Outputs{r.out, r.lse, g.dq, g.dk, g.dv};
          }};
}

// Fused attention on packed rows, 2 sequences, H = 2 heads of D = 3. Self (causal): q, k
// and v side by side in one [5, 18] (lengths 3, 2), one gradient for the three. Cross: q
// [4, 6] (lengths 1, 3) against k and v in one [5, 12] (lengths 3, 2), k at column 6,
// kept probabilities. Outputs: out, lse and the gradients.
OpCase flash_attention_rows_case(std::string name, bool self) {
  std::vector<InputSpec> inputs = self ? std::vector<InputSpec>{{{5, 18}}, {{5, 6}}}
                                       : std::vector<InputSpec>{{{4, 6}}, {{5, 12}}, {{4, 6}}};
  return {std::move(name), std::move(inputs), [self](const Views& in) {
            static const std::vector<int64_t> q_lengths{1, 3}, kv_lengths{3, 2};
            ops::FlashRows rows{.heads = 2, .head_dim = 3};
            ops::FlashAttentionOptions o{.scale = 0.7};
            if (self) {
              rows.query_lengths = rows.key_lengths = kv_lengths;
              rows.k_column = 6;
              rows.v_column = 12;
              o.causal = true;
              const ops::FlashAttentionResult r =
                  ops::flash_attention_rows(in[0], in[0], in[0], rows, o);
              Tensor g = Tensor::empty(in[0].shape(), in[0].dtype());
              ops::flash_attention_rows_backward(in[1], in[0], in[0], in[0], r.out, r.lse, rows, o,
                                                 {}, g, g, g);
              return Outputs{r.out, r.lse, g};
            }
            rows.query_lengths = q_lengths;
            rows.key_lengths = kv_lengths;
            rows.k_column = 6;
            o.keep_probs_up_to_bytes = ops::kFlashKeepProbsBytes;
            const ops::FlashAttentionResult r =
                ops::flash_attention_rows(in[0], in[1], in[1], rows, o);
            EXPECT_EQ(r.probs.defined(), in[0].dtype() == DType::F32);
            Tensor dq = Tensor::empty(in[0].shape(), in[0].dtype());
            Tensor dkv = Tensor::zeros(in[1].shape(), in[0].dtype());  // columns 0..5 shared
            ops::flash_attention_rows_backward(in[2], in[0], in[1], in[1], r.out, r.lse, rows, o,
                                               r.probs.defined() ? r.probs.view() : TensorView(),
                                               dq, dkv, dkv);
            // Finite lse everywhere but past sequence 0's one query.
            return Outputs{r.out, r.lse.slice(1, 0, 1), dq, dkv};
          }};
}

std::vector<OpCase> build_cases() {
  std::vector<OpCase> cases;
  cases.push_back(matmul_case("matmul", {5, 7}, {7, 3}, {5, 3}, {}));
  cases.push_back(matmul_case("matmul_batched", {2, 3, 5, 4}, {2, 3, 4, 6}, {2, 3, 5, 6}, {}));
  cases.push_back(matmul_case("matmul_transposed", {7, 5}, {3, 7}, {5, 3}, {true, true}));
  cases.push_back(
      matmul_case("matmul_trans_b_batched", {2, 5, 7}, {2, 3, 7}, {2, 5, 3}, {false, true}));
  cases.push_back(
      binary_case("add", ops::add, [](const Views& in) { return ops::add_backward(in[2]); }));
  cases.push_back(
      binary_case("sub", ops::sub, [](const Views& in) { return ops::sub_backward(in[2]); }));
  cases.push_back(binary_case(
      "mul", ops::mul, [](const Views& in) { return ops::mul_backward(in[2], in[0], in[1]); }));
  cases.push_back({"scale", {{{3, 5}}, {{3, 5}}}, [](const Views& in) {
                     return Outputs{ops::scale(in[0], -0.7), ops::scale_backward(in[1], -0.7)};
                   }});
  cases.push_back({"linear", {{{37, 19}}, {{23, 19}}, {{23}}}, [](const Views& in) {
                     return Outputs{ops::linear(in[0], in[1], in[2])};
                   }});
  cases.push_back({"linear_relu", {{{37, 19}}, {{23, 19}}, {{23}}}, [](const Views& in) {
                     return Outputs{ops::linear_relu(in[0], in[1], in[2])};
                   }});
  cases.push_back(
      {"linear_backward_through_relu", {{{37, 23}}, {{23, 19}}, {{37, 19}}}, [](const Views& in) {
         return Outputs{ops::linear_backward_through_relu(in[0], in[1], ops::relu(in[2]))};
       }});
  cases.push_back({"add_bias", {{{2, 3, 5}}, {{5}}, {{2, 3, 5}}}, [](const Views& in) {
                     const ops::BiasGrads g = ops::add_bias_backward(in[2]);
                     return Outputs{ops::add_bias(in[0], in[1]), g.dx, g.dbias};
                   }});
  for (auto f : {ops::Activation::Tanh, ops::Activation::Sigmoid, ops::Activation::Relu,
                 ops::Activation::Gelu})
    cases.push_back(activation_case(f));
  cases.push_back({"sum",
                   {{{3, 7}}, {Shape{}}},
                   [](const Views& in) {
                     return Outputs{ops::sum(in[0]), ops::sum_backward(in[1], in[0].shape())};
                   },
                   1e-4});
  cases.push_back({"mean", {{{3, 7}}, {Shape{}}}, [](const Views& in) {
                     return Outputs{ops::mean(in[0]), ops::mean_backward(in[1], in[0].shape())};
                   }});
  cases.push_back(
      {"sum_last", {{{3, 4, 5}}, {{3, 4}}}, [](const Views& in) {
         return Outputs{ops::sum_last(in[0]), ops::sum_last_backward(in[1], in[0].shape())};
       }});
  cases.push_back(softmax_case("softmax", false, false));
  cases.push_back(softmax_case("softmax_masked", false, true));
  cases.push_back(softmax_case("log_softmax", true, false));
  cases.push_back(softmax_case("log_softmax_masked", true, true));
  cases.push_back({"layer_norm",
                   {{{3, 4, 11}}, {{11}}, {{11}}, {{3, 4, 11}}},
                   [](const Views& in) {
                     ops::LayerNormResult r = ops::layer_norm(in[0], in[1], in[2], 1e-5);
                     const ops::LayerNormGradients g =
                         ops::layer_norm_backward(in[3], in[0], in[1], r.mean, r.rstd);
                     return Outputs{r.y, r.mean, r.rstd, g.dx, g.dgamma, g.dbeta};
                   },
                   1e-4,
                   1e-3});
  cases.push_back(
      {"embedding", {{{10, 6}}, {{3, 4}, 10}, {{3, 4, 6}}}, [](const Views& in) {
         return Outputs{ops::embedding(in[0], in[1]), ops::embedding_backward(in[2], in[1], 10)};
       }});
  cases.push_back(
      {"cross_entropy", {{{6, 11}}, {{6}, 11, true}, {Shape{}}}, [](const Views& in) {
         const ops::CrossEntropyOptions o{0.1, -1};
         ops::CrossEntropyResult r = ops::cross_entropy(in[0], in[1], o);
         return Outputs{r.loss, r.lse, ops::cross_entropy_backward(in[2], in[0], in[1], r.lse, o)};
       }});
  cases.push_back({"dropout", {{{5, 8}}, {{5, 8}}}, [](const Views& in) {
                     const ops::DropoutOptions o{0.3, 42, 1, 100};
                     return Outputs{ops::dropout(in[0], o), ops::dropout_backward(in[1], o)};
                   }});
  cases.push_back({"transpose", {{{3, 4, 5}}, {{5, 4, 3}}}, [](const Views& in) {
                     return Outputs{ops::transpose(owned(in[0]), 0, 2),
                                    ops::transpose_backward(owned(in[1]), 0, 2)};
                   }});
  cases.push_back({"reshape", {{{3, 4, 5}}, {{12, 5}}}, [](const Views& in) {
                     return Outputs{ops::reshape(owned(in[0]), Shape{12, 5}),
                                    ops::reshape_backward(owned(in[1]), Shape{3, 4, 5})};
                   }});
  cases.push_back(
      {"l2_normalize", {{{3, 4, 9}}, {{3, 4, 9}}}, [](const Views& in) {
         return Outputs{ops::l2_normalize(in[0]), ops::l2_normalize_backward(in[1], in[0])};
       }});
  cases.push_back({"pairwise_add", {{{2, 3, 5}}, {{2, 4, 5}}, {{2, 3, 4, 5}}}, [](const Views& in) {
                     const ops::BinaryGrads g = ops::pairwise_add_backward(in[2]);
                     return Outputs{ops::pairwise_add(in[0], in[1]), g.da, g.db};
                   }});
  cases.push_back(
      {"additive_scores", {{{2, 3, 9}}, {{2, 5, 9}}, {{9}}, {{2, 3, 5}}}, [](const Views& in) {
         const ops::AdditiveScoresGradients g =
             ops::additive_scores_backward(in[3], in[0], in[1], in[2]);
         return Outputs{ops::additive_scores(in[0], in[1], in[2]), g.dqp, g.dkp, g.dv};
       }});
  cases.push_back(
      flash_attention_case("flash_attention", {2, 3, 5}, {2, 6, 5}, {2, 6, 4}, {2, 3, 4}, false));
  cases.push_back(flash_attention_case("flash_attention_masked", {2, 3, 4, 5}, {2, 3, 4, 5},
                                       {2, 3, 4, 7}, {2, 3, 4, 7}, true));
  cases.push_back(flash_attention_case("flash_attention_kept_probs", {2, 3, 4, 5}, {2, 3, 4, 5},
                                       {2, 3, 4, 7}, {2, 3, 4, 7}, true, true));
  cases.push_back(flash_attention_rows_case("flash_attention_rows_self", true));
  cases.push_back(flash_attention_rows_case("flash_attention_rows_cross", false));
  append_recurrent_cases(cases);
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = build_cases();
  return cases;
}

std::vector<Tensor> make_inputs(const OpCase& c, DType dtype, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (const InputSpec& spec : c.inputs) {
    ++seed;
    if (spec.id_upper == 0) {
      inputs.push_back(random_tensor(spec.shape, dtype, seed));
      continue;
    }
    Tensor ids = random_ids(spec.shape, DType::F64, seed, spec.id_upper);
    if (spec.with_ignored) ids.data<double>()[1] = -1.0;
    inputs.push_back(ids.to(dtype));
  }
  return inputs;
}

}  // namespace qkv::testing
