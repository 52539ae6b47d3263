#include "detail/multi_head_block.h"

#include "qkv/attention/attention.h"
#include "qkv/autograd/functions.h"

namespace qkv::models::detail {

using autograd::Variable;

MultiHeadBlock::MultiHeadBlock(nn::ParameterStore& store, const std::string& prefix, int64_t dim,
                               int64_t heads)
    : dim_(dim),
      heads_(heads),
      q_proj_(store, nn::child_name(prefix, "q_proj"), dim, dim),
      k_proj_(store, nn::child_name(prefix, "k_proj"), dim, dim),
      v_proj_(store, nn::child_name(prefix, "v_proj"), dim, dim),
      out_proj_(store, nn::child_name(prefix, "out_proj"), dim, dim) {}

Variable MultiHeadBlock::split(const nn::Linear& proj, const Variable& x) const {
  const Shape& s = x.value().shape();  // [B, T, E]
  const Variable y = autograd::reshape(proj.forward(x), {s[0], s[1], heads_, dim_ / heads_});
  // [B, T, H, Dh] -> [B, H, T, Dh]; the reshape to [B·H, T, Dh] in attend() needs it
  // contiguous, and so do the decoder's caches: copy once here.
  const Variable t = autograd::transpose(y, 1, 2);
  return autograd::reshape(t, {s[0], heads_, s[1], dim_ / heads_});
}

MultiHeadBlock::Output MultiHeadBlock::attend(const Variable& q, const Variable& k,
                                              const Variable& v,
                                              std::span<const int64_t> key_lengths, bool causal,
                                              bool want_weights) const {
  const int64_t batch = q.value().dim(0), tq = q.value().dim(2), tk = k.value().dim(2);
  const int64_t dh = dim_ / heads_;
  attention::MaskSpec mask;
  mask.causal = causal;
  for (const int64_t len : key_lengths)
    mask.key_lengths.insert(mask.key_lengths.end(), heads_, len);
  attention::AttentionOptions options;  // scaled dot, 1/sqrt(Dh) (eq. 1), fused
  options.need_weights = want_weights;
  const attention::AttentionOutput a =
      attention::attend(autograd::reshape(q, {batch * heads_, tq, dh}),
                        autograd::reshape(k, {batch * heads_, tk, dh}),
                        autograd::reshape(v, {batch * heads_, tk, dh}), mask, {}, options);
  // [B·H, Tq, Dh] -> [B, Tq, H, Dh] -> [B, Tq, E]: concatenated heads, then W_o.
  const Variable heads =
      autograd::transpose(autograd::reshape(a.context, {batch, heads_, tq, dh}), 1, 2);
  Output out{out_proj_.forward(autograd::reshape(heads, {batch, tq, dim_})), {}};
  if (want_weights) out.weights = a.weights.value().contiguous().reshape({batch, heads_, tq, tk});
  return out;
}

}  // namespace qkv::models::detail
