// MultiHeadAttention's steps (project_* and attend_heads, what the Transformer runs with
// its K/V cache) against forward() and against the per-head computation written out
// with attend(): one multi-head attention, however it is called.
#include <vector>

#include "attention_test_util.h"
#include "qkv/attention/multi_head.h"
#include "qkv/autograd/functions.h"
#include "qkv/ops/sequence.h"

namespace qkv::attention::testing {
namespace {

using qkv::testing::all_close;
using qkv::testing::bitwise_equal;

MultiHeadAttention random_mha(int64_t e, int64_t heads, DType dtype) {
  MultiHeadParams p;
  uint64_t seed = 40;
  for (Variable* w : {&p.wq, &p.wk, &p.wv, &p.wo}) *w = leaf(random_tensor({e, e}, dtype, ++seed));
  for (Variable* b : {&p.bq, &p.bk, &p.bv, &p.bo}) *b = leaf(random_tensor({e}, dtype, ++seed));
  return MultiHeadAttention(p, heads);
}

// x [B, T, E] Wᵀ + b restricted to head h's rows of W and b: [B, T, Dh].
Variable head_projection(const Variable& x, const Variable& w, const Variable& b, int64_t h,
                         int64_t dh) {
  const Tensor& t = x.value();
  const Variable wh = leaf(w.value().slice(0, h * dh, (h + 1) * dh).contiguous(), false);
  const Variable bh = leaf(b.value().slice(0, h * dh, (h + 1) * dh).contiguous(), false);
  const Variable rows = autograd::reshape(x, {t.dim(0) * t.dim(1), t.dim(2)});
  const Variable y = autograd::add_bias(autograd::matmul(rows, wh, {.transpose_b = true}), bh);
  return autograd::reshape(y, {t.dim(0), t.dim(1), dh});
}

// Vaswani et al. eq. (4-5) written out: head_h = attend(x W_q,hᵀ, ...), then
// concat_h(head_h) W_oᵀ + b_o, all on the composed path.
Tensor composed_per_head(const MultiHeadAttention& mha, const Variable& q, const Variable& kv,
                         const MaskSpec& mask) {
  const MultiHeadParams& p = mha.params();
  const int64_t heads = mha.heads(), dh = mha.embed_dim() / heads;
  std::vector<Tensor> contexts;
  for (int64_t h = 0; h < heads; ++h) {
    const AttentionOutput a =
        attend(head_projection(q, p.wq, p.bq, h, dh), head_projection(kv, p.wk, p.bk, h, dh),
               head_projection(kv, p.wv, p.bv, h, dh), mask, {},
               {.kind = ScoreKind::ScaledDot, .fused = false});
    contexts.push_back(a.context.value());
  }
  std::vector<TensorView> views;
  for (const Tensor& c : contexts) views.push_back(c.view());
  const Tensor merged = ops::concat(views, 2);  // [B, Tq, E]
  const Variable rows = leaf(merged.reshape({merged.dim(0) * merged.dim(1), merged.dim(2)}), false);
  const Variable y = autograd::add_bias(autograd::matmul(rows, p.wo, {.transpose_b = true}), p.bo);
  return y.value().reshape(merged.shape());
}

TEST(MultiHeadSteps, ForwardIsBitwiseTheProjectionsThenAttendHeads) {
  const MultiHeadAttention mha = random_mha(8, 2, DType::F32);
  const Variable q = leaf(random_tensor({2, 3, 8}, DType::F32, 1), false),
                 kv = leaf(random_tensor({2, 5, 8}, DType::F32, 2), false);
  for (MaskKind kind : all_masks()) {
    SCOPED_TRACE(mask_name(kind));
    const MaskSpec mask = make_mask(kind, 3, 5, DType::F32);
    const MultiHeadOptions options{.need_weights = true, .head_weights = HeadWeights::PerHead};
    const MultiHeadOutput whole = mha.forward(q, kv, kv, mask, options);
    const KeyValueHeads memory = mha.project_key_values(kv);
    const MultiHeadOutput steps =
        mha.attend_heads(mha.project_queries(q), memory.keys, memory.values, mask, options);
    EXPECT_TRUE(bitwise_equal(whole.output.value(), steps.output.value()));
    EXPECT_TRUE(bitwise_equal(whole.weights.value(), steps.weights.value()));
  }
}

TEST(MultiHeadSteps, ProjectionsAreHeadSlicesOfTheLinearMap) {
  const MultiHeadAttention mha = random_mha(6, 3, DType::F64);
  const Variable x = leaf(random_tensor({2, 4, 6}, DType::F64, 3), false);
  const QueryKeyValueHeads self = mha.project_self(x);
  const MultiHeadParams& p = mha.params();
  const std::vector<std::pair<Variable, std::pair<Variable, Variable>>> cases = {
      {self.queries, {p.wq, p.bq}}, {self.keys, {p.wk, p.bk}}, {self.values, {p.wv, p.bv}}};
  for (const auto& [heads, wb] : cases) {
    ASSERT_EQ(heads.value().shape(), Shape({2, 3, 4, 2}));  // [B, H, T, Dh]
    for (int64_t h = 0; h < 3; ++h) {
      const Tensor expected = head_projection(x, wb.first, wb.second, h, 2).value();
      EXPECT_TRUE(all_close(heads.value().slice(1, h, h + 1).contiguous().reshape({2, 4, 2}),
                            expected, 1e-15, 1e-14));
    }
  }
}

TEST(MultiHeadSteps, EqualsThePerHeadComputationWrittenOut) {
  for (DType dtype : {DType::F64, DType::F32}) {
    const double tol = dtype == DType::F64 ? 1e-12 : 2e-5;
    const MultiHeadAttention mha = random_mha(12, 3, dtype);
    const Variable q = leaf(random_tensor({2, 4, 12}, dtype, 5), false),
                   kv = leaf(random_tensor({2, 6, 12}, dtype, 6), false);
    for (MaskKind kind : all_masks()) {
      SCOPED_TRACE(mask_name(kind));
      const MaskSpec mask = make_mask(kind, 4, 6, dtype);
      const Tensor expected = composed_per_head(mha, q, kv, mask);
      EXPECT_TRUE(all_close(mha.forward(q, kv, kv, mask).output.value(), expected, tol, tol));
      EXPECT_TRUE(all_close(mha.forward(q, kv, kv, mask, {.fused = false}).output.value(), expected,
                            tol, tol));
    }
  }
}

// A decoder projecting one position per step and attending over its K/V cache sees what
// the causal forward over the whole sequence sees.
TEST(MultiHeadSteps, KeyValueCacheStepsEqualTheCausalForward) {
  const int64_t t_len = 5;
  const MultiHeadAttention mha = random_mha(8, 2, DType::F64);
  const Tensor x = random_tensor({2, t_len, 8}, DType::F64, 7);
  autograd::NoGradGuard no_grad;
  const Tensor whole = mha.forward(leaf(x), leaf(x), leaf(x), {.causal = true}).output.value();
  Tensor keys, values;
  for (int64_t t = 0; t < t_len; ++t) {
    const QueryKeyValueHeads row = mha.project_self(leaf(x.slice(1, t, t + 1).contiguous()));
    auto append = [](const Tensor& cache, const Tensor& r) {
      if (!cache.defined()) return r;
      const std::vector<TensorView> parts{cache.view(), r.view()};
      return ops::concat(parts, 2);
    };
    keys = append(keys, row.keys.value());
    values = append(values, row.values.value());
    const Tensor step =
        mha.attend_heads(row.queries, leaf(keys), leaf(values), {}).output.value();  // [B, 1, E]
    EXPECT_TRUE(all_close(step, whole.slice(1, t, t + 1), 1e-14, 1e-12)) << "step " << t;
  }
}

// Without gradients and weights attend_heads hands the heads to the fused kernel as they
// are: keys and values that are a slice of a cache with spare capacity along T (the
// Transformer decoder's) give bitwise what their contiguous copy and the recorded path
// give, whatever is in the spare positions.
TEST(MultiHeadSteps, AttendHeadsReadsACacheSliceLikeItsCopy) {
  for (DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const MultiHeadAttention mha = random_mha(8, 2, dtype);
    const int64_t t = 5, capacity = 8;
    const Variable q = leaf(random_tensor({3, 2, 1, 4}, dtype, 11), false);
    const Tensor k = random_tensor({3, 2, t, 4}, dtype, 12),
                 v = random_tensor({3, 2, t, 4}, dtype, 13);
    Tensor k_cache = Tensor::full({3, 2, capacity, 4}, 1e30, dtype);
    Tensor v_cache = Tensor::full({3, 2, capacity, 4}, -1e30, dtype);
    copy_into(k, k_cache.slice(2, 0, t));
    copy_into(v, v_cache.slice(2, 0, t));
    const Tensor k_slice = k_cache.slice(2, 0, t), v_slice = v_cache.slice(2, 0, t);
    ASSERT_FALSE(k_slice.is_contiguous());
    const MaskSpec mask{.key_lengths = {5, 3, 1}};
    // The recorded path: the query requires a gradient.
    const Variable q_grad = leaf(q.value(), true);
    const Tensor recorded =
        mha.attend_heads(q_grad, leaf(k, false), leaf(v, false), mask).output.value();
    autograd::NoGradGuard no_grad;
    const Tensor copied = mha.attend_heads(q, leaf(k, false), leaf(v, false), mask).output.value();
    const Tensor in_place =
        mha.attend_heads(q, leaf(k_slice, false), leaf(v_slice, false), mask).output.value();
    EXPECT_TRUE(bitwise_equal(in_place, copied));
    EXPECT_TRUE(bitwise_equal(in_place, recorded));
  }
}

// key_rows (a beam's rows sharing their sentence's cross-attention memory): the same
// output, bitwise, as the keys and values gathered row by row; refused where the weights
// are asked for or gradients recorded, which need the rows gathered.
TEST(MultiHeadSteps, AttendHeadsKeyRowsEqualGatheredKeys) {
  for (DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const MultiHeadAttention mha = random_mha(8, 2, dtype);
    const std::vector<int64_t> rows{1, 0, 1, 1};
    const Variable q = leaf(random_tensor({4, 2, 1, 4}, dtype, 21), false);
    const Tensor k = random_tensor({2, 2, 5, 4}, dtype, 22),
                 v = random_tensor({2, 2, 5, 4}, dtype, 23);
    Tensor k_rows = Tensor::empty({4, 2, 5, 4}, dtype), v_rows = Tensor::empty({4, 2, 5, 4}, dtype);
    for (int64_t r = 0; r < 4; ++r) {
      copy_into(k.slice(0, rows[size_t(r)], rows[size_t(r)] + 1), k_rows.slice(0, r, r + 1));
      copy_into(v.slice(0, rows[size_t(r)], rows[size_t(r)] + 1), v_rows.slice(0, r, r + 1));
    }
    const MaskSpec mask{.key_lengths = {5, 3, 1, 4}};
    autograd::NoGradGuard no_grad;
    const Tensor gathered =
        mha.attend_heads(q, leaf(k_rows, false), leaf(v_rows, false), mask).output.value();
    const Tensor shared =
        mha.attend_heads(q, leaf(k, false), leaf(v, false), mask, {.key_rows = rows})
            .output.value();
    EXPECT_TRUE(bitwise_equal(shared, gathered));
    EXPECT_THROW(mha.attend_heads(q, leaf(k, false), leaf(v, false), mask,
                                  {.need_weights = true, .key_rows = rows}),
                 ValueError);
  }
}

// project_self is one GEMM over [wq; wk; wv]: in place when the weights are rows of one
// block (as the Transformer's arena holds them), copied otherwise -- the same numbers
// either way -- and equal to the three separate projections within float rounding, in
// the heads and in every gradient.
TEST(MultiHeadSteps, ProjectSelfStackedInPlaceOrCopiedEqualsSeparateProjections) {
  const int64_t e = 8;
  const Tensor block = random_tensor({3 * e, e}, DType::F32, 21, 0.3);
  const Tensor biases = random_tensor({3 * e}, DType::F32, 22);
  auto params = [&](bool in_place) {
    MultiHeadParams p;
    Variable* w[] = {&p.wq, &p.wk, &p.wv};
    Variable* b[] = {&p.bq, &p.bk, &p.bv};
    for (int64_t i = 0; i < 3; ++i) {
      const Tensor wi = block.slice(0, i * e, (i + 1) * e),
                   bi = biases.slice(0, i * e, (i + 1) * e);
      *w[i] = leaf(in_place ? wi : wi.clone());
      *b[i] = leaf(in_place ? bi : bi.clone());
    }
    p.wo = leaf(random_tensor({e, e}, DType::F32, 23));
    return MultiHeadAttention(p, 2);
  };
  const Tensor x = random_tensor({2, 5, e}, DType::F32, 24);
  struct Run {
    std::vector<Tensor> heads, grads;
  };
  auto run = [&](const MultiHeadAttention& mha, bool stacked) {
    const Variable xv = leaf(x);
    const QueryKeyValueHeads h =
        stacked ? mha.project_self(xv)
                : QueryKeyValueHeads{mha.project_queries(xv), mha.project_keys(xv),
                                     mha.project_values(xv)};
    autograd::backward(autograd::add(autograd::sum(autograd::mul(h.queries, h.keys)),
                                     autograd::sum(autograd::mul(h.values, h.values))));
    const MultiHeadParams& p = mha.params();
    return Run{
        {h.queries.value(), h.keys.value(), h.values.value()},
        {xv.grad(), p.wq.grad(), p.wk.grad(), p.wv.grad(), p.bq.grad(), p.bk.grad(), p.bv.grad()}};
  };
  const Run in_place = run(params(true), true), copied = run(params(false), true);
  const Run separate = run(params(false), false);
  for (size_t i = 0; i < in_place.heads.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(in_place.heads[i], copied.heads[i])) << "heads " << i;
    EXPECT_TRUE(all_close(in_place.heads[i], separate.heads[i], 1e-6, 1e-5)) << "heads " << i;
  }
  for (size_t i = 0; i < in_place.grads.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(in_place.grads[i], copied.grads[i])) << "grad " << i;
    EXPECT_TRUE(all_close(in_place.grads[i], separate.grads[i], 1e-5, 1e-5)) << "grad " << i;
  }
}

// Packed rows (the Transformer's training path) against the padded calls: the same
// output and gradients at the real positions.
// F32 runs the fused kernel on packed rows, F64 its reference twin.
void packed_rows_equal_the_padded_batch(DType dtype, double tol) {
  const MultiHeadAttention mha = random_mha(8, 2, dtype);
  const std::vector<int64_t> tgt_lengths{3, 1, 2}, src_lengths{2, 4, 4};
  const PackedBatch tgt = PackedBatch::of(tgt_lengths, 3), src = PackedBatch::of(src_lengths, 4);
  EXPECT_EQ(tgt.rows, (std::vector<int64_t>{0, 1, 2, 3, 6, 7}));
  const Tensor x = random_tensor({3, 3, 8}, dtype, 1), memory = random_tensor({3, 4, 8}, dtype, 2);
  const Tensor weights_out = random_tensor({6, 8}, dtype, 3);  // the loss Σ y ⊙ R
  auto grads_of = [&](const Variable& y) {
    autograd::backward(autograd::sum(autograd::mul(y, leaf(weights_out, false))));
    std::vector<Tensor> g;
    for (const Variable* p : {&mha.params().wq, &mha.params().wk, &mha.params().wv,
                              &mha.params().wo, &mha.params().bq, &mha.params().bo}) {
      g.push_back(p->grad().clone());
      p->zero_grad();
    }
    return g;
  };
  for (const bool self : {true, false}) {
    SCOPED_TRACE(self ? "self-attention" : "cross-attention");
    const Variable xp = leaf(x, true), mp = leaf(memory, true);
    const MaskSpec mask = self ? MaskSpec{.causal = true}
                               : MaskSpec{.key_lengths = {src_lengths.begin(), src_lengths.end()}};
    Variable padded_y;
    if (self) {
      const QueryKeyValueHeads h = mha.project_self(xp);
      padded_y = mha.attend_heads(h.queries, h.keys, h.values, mask).output;
    } else {
      const KeyValueHeads kv = mha.project_key_values(mp);
      padded_y = mha.attend_heads(mha.project_queries(xp), kv.keys, kv.values, mask).output;
    }
    const Variable padded_real =
        autograd::gather_rows(autograd::reshape(padded_y, {9, 8}), tgt.rows);
    const std::vector<Tensor> padded_grads = grads_of(padded_real);

    const Variable xq = leaf(ops::gather_rows(x.reshape({9, 8}), tgt.rows), true);
    const Variable mq = leaf(ops::gather_rows(memory.reshape({12, 8}), src.rows), true);
    const Variable packed_y =
        self ? mha.self_attend(xq, tgt, /*causal=*/true) : mha.cross_attend(xq, tgt, mq, src);
    EXPECT_EQ(packed_y.value().shape(), (Shape{6, 8}));
    EXPECT_TRUE(all_close(packed_y.value(), padded_real.value(), tol, tol));
    const std::vector<Tensor> packed_grads = grads_of(packed_y);
    for (size_t i = 0; i < packed_grads.size(); ++i)
      EXPECT_TRUE(all_close(packed_grads[i], padded_grads[i], tol, tol)) << "parameter " << i;
    const Tensor dx = ops::gather_rows(xp.grad().reshape({9, 8}), tgt.rows);
    EXPECT_TRUE(all_close(xq.grad(), dx, tol, tol));
    if (!self) {
      const Tensor dm = ops::gather_rows(mp.grad().reshape({12, 8}), src.rows);
      EXPECT_TRUE(all_close(mq.grad(), dm, tol, tol));
    }
  }
  // Rows that are not the packed batch's, lengths outside [1, T]: typed errors naming them.
  EXPECT_THROW(mha.self_attend(leaf(random_tensor({5, 8}, dtype, 4), false), tgt, false),
               ShapeError);
  const Variable xq = leaf(random_tensor({6, 8}, dtype, 5), false);
  EXPECT_THROW(mha.cross_attend(xq, tgt, leaf(random_tensor({9, 8}, dtype, 6), false), src),
               ShapeError);  // memory is not src's 10 rows
  const PackedBatch two = PackedBatch::of(std::vector<int64_t>{3, 3}, 3);
  EXPECT_THROW(mha.cross_attend(xq, tgt, leaf(random_tensor({6, 8}, dtype, 7), false), two),
               ShapeError);  // 3 query sequences, 2 memory sequences
  PackedBatch handmade = tgt;
  handmade.lengths.clear();
  EXPECT_THROW(mha.self_attend(xq, handmade, false), ValueError);
  EXPECT_THROW(PackedBatch::of(std::vector<int64_t>{2, 0}, 3), ValueError);
  EXPECT_THROW(PackedBatch::of(std::vector<int64_t>{4}, 3), ValueError);
}

TEST(MultiHeadSteps, PackedRowsEqualThePaddedBatchAtItsRealPositions) {
  packed_rows_equal_the_padded_batch(DType::F64, 1e-12);
  packed_rows_equal_the_padded_batch(DType::F32, 2e-5);
}

TEST(MultiHeadSteps, AttendHeadsRejectsHeadsOfAnotherShape) {
  const MultiHeadAttention mha = random_mha(8, 2, DType::F32);
  const Variable good = leaf(random_tensor({2, 2, 3, 4}, DType::F32, 8), false);
  const Variable wrong_heads = leaf(random_tensor({2, 4, 3, 2}, DType::F32, 9), false);
  const Variable flat = leaf(random_tensor({2, 3, 8}, DType::F32, 10), false);
  const Variable other_batch = leaf(random_tensor({1, 2, 3, 4}, DType::F32, 11), false);
  EXPECT_THROW(mha.attend_heads(wrong_heads, good, good, {}), ShapeError);
  EXPECT_THROW(mha.attend_heads(good, flat, good, {}), ShapeError);
  EXPECT_THROW(mha.attend_heads(good, other_batch, other_batch, {}), ShapeError);
  EXPECT_THROW(mha.attend_heads(good, good, leaf(random_tensor({2, 2, 4, 4}, DType::F32, 12)), {}),
               ShapeError);
  EXPECT_THROW(mha.attend_heads(good, good, leaf(random_tensor({2, 2, 3, 4}, DType::F64, 13)), {}),
               ValueError);
  EXPECT_THROW(mha.project_keys(leaf(random_tensor({2, 3, 6}, DType::F32, 14))), ShapeError);
  EXPECT_THROW(mha.attend_heads(good, good, good, {.key_lengths = {1}}), ShapeError);
}

}  // namespace
}  // namespace qkv::attention::testing
