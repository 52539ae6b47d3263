#include "detail/mask.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::attention::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ShapeError unless t is [Tq, Tk] or [B, Tq, Tk]; returns its values as a contiguous
// float64 [B, Tq, Tk] (broadcast over B when it has no batch dim).
std::vector<double> broadcast_values(std::string_view what, const Tensor& t, const ScoreDims& d) {
  const bool shared = t.shape() == Shape{d.queries, d.keys};
  const bool batched = t.shape() == Shape{d.batch, d.queries, d.keys};
  QKV_CHECK(shared || batched, ShapeError, "attend: mask ", what, " ", describe(t),
            " is neither [Tq, Tk] = [", d.queries, ", ", d.keys, "] nor [B, Tq, Tk] = [", d.batch,
            ", ", d.queries, ", ", d.keys, "]");
  Tensor packed = Tensor::empty(t.shape(), DType::F64);
  copy_into(t, packed);
  const std::vector<double> v = packed.to_vector<double>();
  if (!shared) return v;
  std::vector<double> out;
  out.reserve(size_t(d.batch) * v.size());
  for (int64_t b = 0; b < d.batch; ++b) out.insert(out.end(), v.begin(), v.end());
  return out;
}

// "[b, i, j]" for flat index n of a [B, Tq, Tk] buffer (error messages).
std::string position(size_t n, const ScoreDims& d) {
  const int64_t flat = int64_t(n), per_batch = d.queries * d.keys;
  // Streamed, not std::string operator+: GCC 12 -O3 warns (-Wrestrict) on the latter.
  return qkv::detail::concat("[", flat / per_batch, ", ", flat % per_batch / d.keys, ", ",
                             flat % d.keys, "]");
}

// bias [B·Tq·Tk] += user bias (checked: same dtype as the scores, no NaN or +inf).
void add_user_bias(const Tensor& bias, const ScoreDims& d, DType dtype, std::vector<double>& out) {
  QKV_CHECK(bias.dtype() == dtype, ValueError, "attend: mask bias ", describe(bias),
            " has another dtype than the scores (", dtype_name(dtype), ")");
  const std::vector<double> v = broadcast_values("bias", bias, d);
  for (size_t i = 0; i < v.size(); ++i) {
    QKV_CHECK(!std::isnan(v[i]) && v[i] != kInf, ValueError, "attend: mask bias holds ", v[i],
              " at [b, i, j] = ", position(i, d), "; only finite values and -inf mask");
    out[i] += v[i];
  }
}

// −inf wherever allowed is 0 (checked: every value exactly 0 or 1).
void apply_allowed(const Tensor& allowed, const ScoreDims& d, std::vector<double>& out) {
  const std::vector<double> v = broadcast_values("allowed", allowed, d);
  for (size_t i = 0; i < v.size(); ++i) {
    QKV_CHECK(v[i] == 0.0 || v[i] == 1.0, ValueError, "attend: mask allowed ", describe(allowed),
              " holds ", v[i], " at [b, i, j] = ", position(i, d),
              "; it must be 0 (masked) or 1 (visible)");
    if (v[i] == 0.0) out[i] = -kInf;
  }
}

}  // namespace

void check_key_lengths(const std::vector<int64_t>& lengths, const ScoreDims& d) {
  QKV_CHECK(int64_t(lengths.size()) == d.batch, ShapeError, "attend: ", lengths.size(),
            " key_lengths for batch size B = ", d.batch);
  for (size_t b = 0; b < lengths.size(); ++b)
    QKV_CHECK(lengths[b] >= 0 && lengths[b] <= d.keys, ValueError, "attend: key_lengths[", b,
              "] = ", lengths[b], " outside [0, Tk = ", d.keys, "]");
}

Tensor mask_bias(const MaskSpec& mask, const ScoreDims& d, DType dtype) {
  if (!mask.key_lengths.empty()) check_key_lengths(mask.key_lengths, d);
  if (mask.key_lengths.empty() && !mask.causal && !mask.bias.defined() && !mask.allowed.defined())
    return {};
  std::vector<double> out(size_t(d.batch * d.queries * d.keys), 0.0);
  if (mask.bias.defined()) add_user_bias(mask.bias, d, dtype, out);
  if (mask.allowed.defined()) apply_allowed(mask.allowed, d, out);
  // Query i sees key j iff j <= i + (Tk − Tq) (causal, end-aligned) and j < key_lengths[b].
  const int64_t shift = d.keys - d.queries;
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t length = mask.key_lengths.empty() ? d.keys : mask.key_lengths[size_t(b)];
    for (int64_t i = 0; i < d.queries; ++i)
      for (int64_t j = 0; j < d.keys; ++j)
        if (j >= length || (mask.causal && j > i + shift))
          out[size_t((b * d.queries + i) * d.keys + j)] = -kInf;
  }
  return Tensor::from(Shape{d.batch, d.queries, d.keys}, out).to(dtype);
}

Tensor repeat_per_head(const Tensor& bias, int64_t heads) {
  const int64_t batch = bias.dim(0), block = bias.dim(1) * bias.dim(2);
  const Tensor f64 = bias.to(DType::F64).contiguous();
  const double* src = f64.data<double>();
  std::vector<double> out;
  out.reserve(size_t(batch * heads * block));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      out.insert(out.end(), src + b * block, src + (b + 1) * block);
  return Tensor::from(Shape{batch * heads, bias.dim(1), bias.dim(2)}, out).to(bias.dtype());
}

}  // namespace qkv::attention::detail
