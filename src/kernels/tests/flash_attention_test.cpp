// Fused attention kernel vs its float64 reference twin, on every SIMD target. The
// accuracy bound is relative to what the composed float32 path (gemm + masked softmax
// + gemm, as attend() runs it) achieves on the same inputs: fused error <= 2× composed
// + 1e-5 (forward), 3× + 1e-5 (gradients).
#include "qkv/kernels/flash_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "kernel_test_util.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/gemm.h"
#include "qkv/kernels/softmax.h"

namespace qkv::kernels {
namespace {

using testing::bitwise_equal;
using testing::for_each_simd_target;
using testing::random_floats;
using testing::seed_for;
using testing::to_double;
using Vec = std::vector<float>;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Problem {
  FlashAttentionSpec spec;
  std::vector<int64_t> lengths;
  Vec q, k, v, dout;
};

Problem make_problem(int64_t bh, int64_t tq, int64_t tk, int64_t dh, int64_t dv, bool causal,
                     bool lengths, uint32_t seed) {
  Problem p;
  p.spec = {bh, tq, tk, dh, dv, 1.0 / std::sqrt(double(dh)), causal, nullptr};
  if (lengths) {
    for (int64_t h = 0; h < bh; ++h) p.lengths.push_back(h == 0 ? 0 : (tk * h) / bh + 1);
    p.spec.key_lengths = p.lengths.data();
  }
  p.q = random_floats(bh * tq * dh, seed, -2, 2);
  p.k = random_floats(bh * tk * dh, seed + 1, -2, 2);
  p.v = random_floats(bh * tk * dv, seed + 2);
  p.dout = random_floats(bh * tq * dv, seed + 3);
  return p;
}

struct Result {
  Vec out, lse, dq, dk, dv;
};

// Every output starts as NaN: the kernels must write each element themselves (the
// backward zeroes its gradients before adding into them; nothing may rely on the
// caller's zeros), and NaN never passes a comparison.
// keep: the forward keeps the probabilities (NaN-filled before, so every slot the
// backward reads must have been written) and the backward reads them; `tamper` then
// changes them in between.
Result run_fused(const Problem& p, bool keep = false, void (*tamper)(std::span<float>) = nullptr) {
  const auto& s = p.spec;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Result r{Vec(s.bh * s.tq * s.dv, nan), Vec(s.bh * s.tq, nan), Vec(s.bh * s.tq * s.dh, nan),
           Vec(s.bh * s.tk * s.dh, nan), Vec(s.bh * s.tk * s.dv, nan)};
  Vec probs(keep ? size_t(flash_attention_probs_size(s)) : 0, nan);
  float* kept = keep ? probs.data() : nullptr;
  flash_attention_forward(s, p.q.data(), p.k.data(), p.v.data(), r.out.data(), r.lse.data(), kept);
  if (tamper) tamper(probs);
  Vec delta(s.bh * s.tq);
  flash_attention_backward(s, p.q.data(), p.k.data(), p.v.data(), r.out.data(), r.lse.data(),
                           p.dout.data(), delta.data(), r.dq.data(), r.dk.data(), r.dv.data(),
                           kept);
  return r;
}

// The composed float32 path, head by head: S = scale Q Kᵀ, masked scores -inf,
// P = softmax(S), O = P V; backward through softmax_rows_backward.
Result run_composed(const Problem& p) {
  const auto& s = p.spec;
  Result r{Vec(s.bh * s.tq * s.dv),
           {},
           Vec(s.bh * s.tq * s.dh),
           Vec(s.bh * s.tk * s.dh),
           Vec(s.bh * s.tk * s.dv)};
  Vec sc(s.tq * s.tk), dp(s.tq * s.tk);
  for (int64_t h = 0; h < s.bh; ++h) {
    const float* q = p.q.data() + h * s.tq * s.dh;
    const float* k = p.k.data() + h * s.tk * s.dh;
    const float* v = p.v.data() + h * s.tk * s.dv;
    const float* g = p.dout.data() + h * s.tq * s.dv;
    gemm({false, true, s.tq, s.tk, s.dh, s.scale, 0, s.dh, s.dh, s.tk}, q, k, sc.data());
    for (int64_t i = 0; i < s.tq; ++i)
      for (int64_t j = ref::flash_visible(s, h, i); j < s.tk; ++j) sc[i * s.tk + j] = -kInf;
    softmax_rows(sc.data(), sc.data(), s.tq, s.tk);
    gemm({false, false, s.tq, s.dv, s.tk, 1, 0, s.tk, s.dv, s.dv}, sc.data(), v,
         r.out.data() + h * s.tq * s.dv);
    gemm({false, true, s.tq, s.tk, s.dv, 1, 0, s.dv, s.dv, s.tk}, g, v, dp.data());
    softmax_rows_backward(sc.data(), dp.data(), dp.data(), s.tq, s.tk);
    gemm({false, false, s.tq, s.dh, s.tk, s.scale, 0, s.tk, s.dh, s.dh}, dp.data(), k,
         r.dq.data() + h * s.tq * s.dh);
    gemm({true, false, s.tk, s.dh, s.tq, s.scale, 0, s.tk, s.dh, s.dh}, dp.data(), q,
         r.dk.data() + h * s.tk * s.dh);
    gemm({true, false, s.tk, s.dv, s.tq, 1, 0, s.tk, s.dv, s.dv}, sc.data(), g,
         r.dv.data() + h * s.tk * s.dv);
  }
  return r;
}

struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

Reference run_reference(const Problem& p) {
  const auto& s = p.spec;
  Reference r{std::vector<double>(s.bh * s.tq * s.dv), std::vector<double>(s.bh * s.tq),
              std::vector<double>(s.bh * s.tq * s.dh), std::vector<double>(s.bh * s.tk * s.dh),
              std::vector<double>(s.bh * s.tk * s.dv)};
  const auto q = to_double(p.q), k = to_double(p.k), v = to_double(p.v), g = to_double(p.dout);
  ref::flash_attention_forward(s, q.data(), k.data(), v.data(), r.out.data(), r.lse.data());
  ref::flash_attention_backward(s, q.data(), k.data(), v.data(), g.data(), r.dq.data(), r.dk.data(),
                                r.dv.data());
  return r;
}

// Largest |got − want|; infinities must match exactly, NaN never passes.
double max_err(const Vec& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return kInf;
    if (std::isinf(got[i]) || std::isinf(want[i])) {
      if (double(got[i]) != want[i]) return kInf;
      continue;
    }
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  }
  return worst;
}

// The reference is target-independent: computed once, then checked on every target.
void check_against_reference(const Problem& p, const Reference& want, bool keep = false) {
  const Result fused = run_fused(p, keep), composed = run_composed(p);
  auto check = [&](const char* what, const Vec& f, const Vec& c, const std::vector<double>& w,
                   double factor, double floor) {
    const double ef = max_err(f, w), ec = max_err(c, w);
    EXPECT_LE(ef, factor * ec + floor) << what << ": fused " << ef << " composed " << ec;
  };
  // Gradient floor: FlashAttention-2 takes δ_i = dO_i·O_i instead of the composed
  // Σ_j P_ij dP_ij, so the float rounding of dP no longer cancels in dP − δ. Where the
  // composed error is exactly 0 (tk = 1: P ≡ 1, true dK = 0) the fused dK is a sum of
  // tq such roundings, ~sqrt(tq)·eps·|dO||V|: 2e-5 at tq = 1024. Hence 1e-5·sqrt(tq/64).
  const double grad_floor = 1e-5 * std::max(1.0, std::sqrt(double(p.spec.tq) / 64));
  check("out", fused.out, composed.out, want.out, 2, 1e-5);
  EXPECT_LE(max_err(fused.lse, want.lse), 1e-5) << "lse";
  check("dq", fused.dq, composed.dq, want.dq, 3, grad_floor);
  check("dk", fused.dk, composed.dk, want.dk, 3, grad_floor);
  check("dv", fused.dv, composed.dv, want.dv, 3, grad_floor);
}

struct Shape {
  int64_t bh, tq, tk, dh, dv;
};

// Each (tq, tk) of the brief paired with a few head dims (not all combinations: the
// double reference is O(bh·tq·tk·d) per pass).
constexpr Shape kShapes[] = {
    {2, 1, 239, 1, 7},
    {2, 1, 239, 128, 64},
    {5, 1, 64, 64, 64},
    {3, 1, 1, 17, 33},
    // One query, dv of 1, 2, 4, 8 and 16 vectors (AVX-512 / AVX2): the value sum held in
    // registers, and in memory past 8 vectors.
    {2, 1, 70, 16, 16},
    {2, 1, 100, 32, 32},
    {1, 1, 150, 128, 128},
    {1, 1, 65, 8, 256},
    {2, 3, 799, 59, 111},
    {2, 3, 799, 7, 1},
    {2, 257, 257, 64, 64},
    {1, 257, 257, 111, 59},
    {1, 1024, 1, 7, 128},
    {1, 1024, 1, 1, 1},
    // dh, dv above the kernel's 128: Qᵀ, dOᵀ transposed in chunks.
    {1, 70, 130, 200, 150},
};

// Every shape with and without the causal mask and key lengths: the problem, its float64
// reference (target-independent: computed once), then check(shape, problem, reference)
// on every SIMD target.
template <class Check>
void on_every_problem(std::span<const Shape> shapes, uint32_t seed, Check check) {
  for (const Shape& sh : shapes)
    for (bool causal : {false, true})
      for (bool lengths : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "bh " << sh.bh << " tq " << sh.tq << " tk " << sh.tk << " dh " << sh.dh
                     << " dv " << sh.dv << " causal " << causal << " lengths " << lengths);
        const Problem p = make_problem(sh.bh, sh.tq, sh.tk, sh.dh, sh.dv, causal, lengths,
                                       seed_for(++seed, sh.tq, sh.dh));
        const Reference want = run_reference(p);
        for_each_simd_target([&](const SimdTarget&) { check(sh, p, want); });
      }
}

TEST(FlashAttention, MatchesReferenceOnEveryTarget) {
  on_every_problem(kShapes, 0, [](const Shape&, const Problem& p, const Reference& want) {
    check_against_reference(p, want);
  });
}

// Kept probabilities: the same accuracy, forward's results unchanged by keeping them
// (bitwise, where tq > 1), on shapes with partial query and key tiles, one query (tiled when
// keeping), one key, masks, and head dims above 128.
TEST(FlashAttention, KeptProbabilitiesMatchReferenceOnEveryTarget) {
  constexpr Shape kKeptShapes[] = {{2, 1, 239, 128, 64},   {2, 3, 300, 59, 111},
                                   {2, 130, 150, 32, 24},  {1, 1024, 1, 7, 128},
                                   {1, 70, 130, 200, 150}, {3, 30, 31, 16, 16}};
  on_every_problem(kKeptShapes, 100, [](const Shape& sh, const Problem& p, const Reference& want) {
    check_against_reference(p, want, /*keep=*/true);
    if (sh.tq == 1) return;  // keeping runs one query through the tiles: other bits
    const Result kept = run_fused(p, true), recomputed = run_fused(p);
    EXPECT_TRUE(bitwise_equal(kept.out, recomputed.out));
    EXPECT_TRUE(bitwise_equal(kept.lse, recomputed.lse));
  });
}

// The backward really reads what forward kept: with the kept probabilities zeroed every
// gradient is 0 (dV = Pᵀ dO, dS = P ⊙ (dP − δ)), where recomputing them would not be.
TEST(FlashAttention, BackwardReadsTheKeptProbabilities) {
  for_each_simd_target([](const SimdTarget&) {
    const Problem p = make_problem(2, 100, 90, 16, 8, true, false, 404);
    const Result kept = run_fused(p, true);
    const Result zeroed =
        run_fused(p, true, [](std::span<float> probs) { std::ranges::fill(probs, 0.0f); });
    for (const auto& [got, nonzero] :
         {std::pair{&zeroed.dq, &kept.dq}, std::pair{&zeroed.dk, &kept.dk},
          std::pair{&zeroed.dv, &kept.dv}}) {
      EXPECT_TRUE(std::all_of(got->begin(), got->end(), [](float x) { return x == 0.0f; }));
      EXPECT_TRUE(std::any_of(nonzero->begin(), nonzero->end(), [](float x) { return x != 0.0f; }));
    }
  });
}

TEST(FlashAttention, KeptProbabilitiesSizeCoversEveryTile) {
  // Per (head, query tile, key tile) the tile's keys and one factor row × its lanes, at
  // most 64 keys and 64 lanes; lanes padded to 16, keys not padded.
  EXPECT_EQ(flash_attention_probs_size({3, 130, 97, 8, 8, 1.0, false, nullptr}),
            3 * 3 * 2 * (65 * 64));
  EXPECT_EQ(flash_attention_probs_size({2, 30, 31, 8, 8, 1.0, false, nullptr}), 2 * (32 * 32));
  EXPECT_EQ(flash_attention_probs_size({4, 1, 500, 8, 8, 1.0, false, nullptr}), 4 * 8 * (65 * 16));
}

TEST(FlashAttention, FullyMaskedRowsAreZeroAndFinite) {
  for_each_simd_target([](const SimdTarget&) {
    // Head 0 has key length 0; causal with tq > tk masks the first tq − tk rows; and one
    // query per head (the decoding step's path).
    for (const Problem& p : {make_problem(2, 70, 5, 9, 3, true, true, 77),
                             make_problem(3, 1, 5, 9, 3, false, true, 78)}) {
      for (const bool keep : {false, true}) {
        const Result r = run_fused(p, keep);
        const auto& s = p.spec;
        for (int64_t h = 0; h < s.bh; ++h)
          for (int64_t i = 0; i < s.tq; ++i) {
            const bool masked = ref::flash_visible(s, h, i) == 0;
            if (masked) {
              EXPECT_EQ(r.lse[h * s.tq + i], -kInf);
            }
            for (int64_t c = 0; c < s.dv; ++c) {
              const float o = r.out[(h * s.tq + i) * s.dv + c];
              EXPECT_TRUE(std::isfinite(o));
              if (masked) {
                EXPECT_EQ(o, 0.0f);
              }
            }
            for (int64_t c = 0; masked && c < s.dh; ++c)
              EXPECT_EQ(r.dq[(h * s.tq + i) * s.dh + c], 0.0f);
          }
        for (const Vec* g : {&r.dq, &r.dk, &r.dv})
          for (float x : *g) EXPECT_TRUE(std::isfinite(x));
        for (int64_t n = 0; n < s.tk * s.dh; ++n) EXPECT_EQ(r.dk[n], 0.0f);  // head 0 sees nothing
      }
    }
  });
}

TEST(FlashAttention, WeightsMatchReference) {
  for_each_simd_target([](const SimdTarget&) {
    const Problem p = make_problem(3, 130, 97, 33, 5, true, true, 91);
    const auto& s = p.spec;
    const Result r = run_fused(p);
    const int64_t b = 3, e = 129;
    Vec got(s.bh * (e - b) * s.tk);
    flash_attention_weights(s, p.q.data(), p.k.data(), r.lse.data(), b, e, got.data());
    const auto q = to_double(p.q), k = to_double(p.k), lse = to_double(r.lse);
    std::vector<double> want(got.size());
    ref::flash_attention_weights(s, q.data(), k.data(), lse.data(), b, e, want.data());
    EXPECT_LE(max_err(got, want), 1e-5);
  });
}

// k and v with spare rows after each head's tk (a decoder's cache [B, H, capacity, D]
// sliced to tk), the spare rows NaN: read in place through the head strides, every result
// is bitwise the dense layout's, and nothing past tk is read.
Vec with_spare_rows(const Vec& dense, int64_t bh, int64_t rows, int64_t d, int64_t capacity) {
  Vec out(size_t(bh * capacity * d), std::numeric_limits<float>::quiet_NaN());
  for (int64_t h = 0; h < bh; ++h)
    std::copy_n(dense.begin() + h * rows * d, rows * d, out.begin() + h * capacity * d);
  return out;
}

TEST(FlashAttention, HeadStridedKeysAndValuesEqualDense) {
  for_each_simd_target([](const SimdTarget&) {
    for (const int64_t tq : {1, 19}) {
      for (const bool causal : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "tq " << tq << (causal ? " causal" : ""));
        const Problem dense = make_problem(5, tq, 37, 24, 16, causal, !causal, 300 + tq);
        const int64_t cap = dense.spec.tk + 11;
        Problem strided = dense;
        strided.spec.key_lengths = strided.lengths.empty() ? nullptr : strided.lengths.data();
        strided.k = with_spare_rows(dense.k, dense.spec.bh, dense.spec.tk, dense.spec.dh, cap);
        strided.v = with_spare_rows(dense.v, dense.spec.bh, dense.spec.tk, dense.spec.dv, cap);
        strided.spec.k_head_stride = cap * dense.spec.dh;
        strided.spec.v_head_stride = cap * dense.spec.dv;
        const Result want = run_fused(dense), got = run_fused(strided);
        EXPECT_TRUE(bitwise_equal(got.out, want.out));
        EXPECT_TRUE(bitwise_equal(got.lse, want.lse));
        EXPECT_TRUE(bitwise_equal(got.dq, want.dq));
        EXPECT_TRUE(bitwise_equal(got.dk, want.dk));
        EXPECT_TRUE(bitwise_equal(got.dv, want.dv));
        const auto& s = dense.spec;
        Vec w_dense(s.bh * s.tq * s.tk), w_strided(w_dense.size());
        flash_attention_weights(dense.spec, dense.q.data(), dense.k.data(), want.lse.data(), 0,
                                s.tq, w_dense.data());
        flash_attention_weights(strided.spec, strided.q.data(), strided.k.data(), want.lse.data(),
                                0, s.tq, w_strided.data());
        EXPECT_TRUE(bitwise_equal(w_strided, w_dense));
        // The reference twin reads the same layout.
        const Reference ref_dense = run_reference(dense), ref_strided = run_reference(strided);
        EXPECT_EQ(ref_strided.out, ref_dense.out);
        EXPECT_EQ(ref_strided.dk, ref_dense.dk);
        EXPECT_EQ(ref_strided.dv, ref_dense.dv);
      }
    }
  });
}

// Packed rows (FlashAttentionRows) against the padded heads: B sequences of lengths[b]
// positions, H heads of D columns side by side in each row. The dense problem's padded
// query rows have dO = 0 (what the padded heads' gradient held), so every real row's
// results must be the same bits, and every row of the packed gradients written.
struct PackedLayout {
  int64_t batch, heads, d, t;
  std::vector<int64_t> lengths, starts;
  int64_t rows() const { return starts.back() + lengths.back(); }
  // Dense [B·H, T, d] <-> packed [rows, ld] with head h of sequence b at column
  // column + h·d of rows starts[b] + i, i < lengths[b].
  template <class F>
  void each(int64_t ld, int64_t column, F f) const {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < lengths[size_t(b)]; ++i)
          for (int64_t c = 0; c < d; ++c)
            f(((b * heads + h) * t + i) * d + c, (starts[size_t(b)] + i) * ld + column + h * d + c);
  }
};

PackedLayout packed_layout(std::vector<int64_t> lengths, int64_t heads, int64_t d, int64_t t) {
  PackedLayout l{int64_t(lengths.size()), heads, d, t, std::move(lengths), {}};
  int64_t at = 0;
  for (int64_t n : l.lengths) {
    l.starts.push_back(at);
    at += n;
  }
  return l;
}

TEST(FlashAttention, PackedRowsEqualPaddedHeadsAtRealPositions) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for_each_simd_target([&](const SimdTarget&) {
    for (const bool causal : {false, true})
      for (const bool keep : {false, true}) {
        SCOPED_TRACE(::testing::Message() << (causal ? "causal" : "") << (keep ? " kept" : ""));
        // Self-attention, q, k and v side by side in one [N, 3·H·D] (the training path);
        // lengths with partial and whole tiles, one of them 1.
        const int64_t heads = 2, d = 24, t = 70, w = heads * d;
        const PackedLayout l = packed_layout({70, 1, 65, 33}, heads, d, t);
        Problem dense = make_problem(l.batch * heads, t, t, d, d, causal, false, 900 + causal);
        std::vector<int64_t> per_head;
        for (int64_t n : l.lengths) per_head.insert(per_head.end(), size_t(heads), n);
        dense.spec.key_lengths = per_head.data();
        for (int64_t h = 0; h < dense.spec.bh; ++h)  // dO = 0 on the padded query rows
          for (int64_t i = per_head[size_t(h)]; i < t; ++i)
            std::fill_n(dense.dout.begin() + (h * t + i) * d, d, 0.0f);
        const Result want = run_fused(dense, keep);

        const int64_t n = l.rows();
        Vec qkv(size_t(n * 3 * w), nan), dout(size_t(n * w), nan);
        l.each(3 * w, 0, [&](int64_t i, int64_t r) { qkv[size_t(r)] = dense.q[size_t(i)]; });
        l.each(3 * w, w, [&](int64_t i, int64_t r) { qkv[size_t(r)] = dense.k[size_t(i)]; });
        l.each(3 * w, 2 * w, [&](int64_t i, int64_t r) { qkv[size_t(r)] = dense.v[size_t(i)]; });
        l.each(w, 0, [&](int64_t i, int64_t r) { dout[size_t(r)] = dense.dout[size_t(i)]; });
        const FlashAttentionRows rows{heads,
                                      l.starts.data(),
                                      l.lengths.data(),
                                      l.starts.data(),
                                      l.lengths.data(),
                                      3 * w,
                                      3 * w,
                                      3 * w,
                                      w};
        FlashAttentionSpec spec = dense.spec;
        spec.key_lengths = nullptr;
        spec.rows = &rows;
        Vec out(size_t(n * w), nan), lse(size_t(spec.bh * t), nan), dqkv(qkv.size(), nan);
        Vec probs(keep ? size_t(flash_attention_probs_size(spec)) : 0, nan), delta(lse.size());
        float* kept = keep ? probs.data() : nullptr;
        flash_attention_forward(spec, qkv.data(), qkv.data() + w, qkv.data() + 2 * w, out.data(),
                                lse.data(), kept);
        flash_attention_backward(spec, qkv.data(), qkv.data() + w, qkv.data() + 2 * w, out.data(),
                                 lse.data(), dout.data(), delta.data(), dqkv.data(),
                                 dqkv.data() + w, dqkv.data() + 2 * w, kept);
        auto same = [&](const char* what, const Vec& packed, int64_t ld, int64_t column,
                        const Vec& padded) {
          int64_t differ = 0;
          l.each(ld, column, [&](int64_t i, int64_t r) {
            const float a = packed[size_t(r)], b = padded[size_t(i)];
            differ += std::memcmp(&a, &b, sizeof a) != 0;
          });
          EXPECT_EQ(differ, 0) << what;
        };
        same("out", out, w, 0, want.out);
        same("dq", dqkv, 3 * w, 0, want.dq);
        same("dk", dqkv, 3 * w, w, want.dk);
        same("dv", dqkv, 3 * w, 2 * w, want.dv);
        EXPECT_TRUE(std::none_of(dqkv.begin(), dqkv.end(), [](float x) { return std::isnan(x); }));
        for (int64_t h = 0; h < spec.bh; ++h)
          for (int64_t i = 0; i < t; ++i) {
            const float a = lse[size_t(h * t + i)];
            EXPECT_EQ(a, i < per_head[size_t(h)] ? want.lse[size_t(h * t + i)] : -kInf);
          }
        // The reference twin reads the same layout: the same (double) results.
        if (keep) continue;
        const Reference ref_dense = run_reference(dense);
        const std::vector<double> qkv64 = to_double(qkv), dout64 = to_double(dout);
        std::vector<double> out64(out.size()), lse64(lse.size()), dqkv64(qkv.size());
        ref::flash_attention_forward(spec, qkv64.data(), qkv64.data() + w, qkv64.data() + 2 * w,
                                     out64.data(), lse64.data());
        ref::flash_attention_backward(spec, qkv64.data(), qkv64.data() + w, qkv64.data() + 2 * w,
                                      dout64.data(), dqkv64.data(), dqkv64.data() + w,
                                      dqkv64.data() + 2 * w);
        int64_t differ = 0;
        l.each(w, 0, [&](int64_t i, int64_t r) {
          differ += out64[size_t(r)] != ref_dense.out[size_t(i)];
        });
        l.each(3 * w, w, [&](int64_t i, int64_t r) {
          differ += dqkv64[size_t(r)] != ref_dense.dk[size_t(i)];
        });
        l.each(3 * w, 2 * w, [&](int64_t i, int64_t r) {
          differ += dqkv64[size_t(r)] != ref_dense.dv[size_t(i)];
        });
        EXPECT_EQ(differ, 0) << "reference";
      }
  });
}

TEST(FlashAttention, BitwiseIdenticalForOneAndTwoThreads) {
  const int before = num_threads();
  for (bool causal : {false, true})
    for (bool keep : {false, true}) {
      const Problem p = make_problem(3, 257, 200, 64, 48, causal, true, 5);
      set_num_threads(1);
      const Result one = run_fused(p, keep);
      set_num_threads(2);
      const Result two = run_fused(p, keep);
      EXPECT_TRUE(bitwise_equal(one.out, two.out));
      EXPECT_TRUE(bitwise_equal(one.lse, two.lse));
      EXPECT_TRUE(bitwise_equal(one.dq, two.dq));
      EXPECT_TRUE(bitwise_equal(one.dk, two.dk));
      EXPECT_TRUE(bitwise_equal(one.dv, two.dv));
    }
  set_num_threads(before);
}

}  // namespace
}  // namespace qkv::kernels
