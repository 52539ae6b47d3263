#include "qkv/decode/greedy.h"

#include "detail/rows.h"
#include "detail/top_k.h"
#include "qkv/autograd/packed_weights.h"
#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"

namespace qkv::decode {

std::vector<std::vector<int32_t>> greedy_decode(models::Seq2Seq& model, const Tensor& src,
                                                std::span<const int64_t> src_lengths,
                                                int64_t max_length) {
  QKV_CHECK(max_length >= 1, ValueError, "greedy_decode: max_length = ", max_length,
            " must be >= 1");
  const models::ModelConfig& config = model.config();
  const models::EncoderOutput encoded = model.encode(src, src_lengths);
  std::unique_ptr<models::DecoderState> state = model.initial_state(encoded);
  // Every step multiplies a few rows by the same decoder weights: pack them once.
  const autograd::PackedWeightsScope packed_weights;
  const auto batch = static_cast<int64_t>(src_lengths.size());

  std::vector<std::vector<int32_t>> out(static_cast<size_t>(batch));
  // active[i]: the input row that row i of the decoder state belongs to.
  std::vector<int64_t> active(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) active[size_t(b)] = b;
  std::vector<float> prev(static_cast<size_t>(batch), static_cast<float>(config.bos_id));

  for (int64_t t = 0; t < max_length && !active.empty(); ++t) {
    const Tensor ids = Tensor::from({int64_t(active.size())}, prev);
    const models::StepOutput step = model.step(ids, *state, /*want_attention=*/false);
    std::vector<int64_t> keep;  // rows of the state that go on
    std::vector<int64_t> next_active;
    std::vector<float> next_prev;
    const std::vector<int32_t> tokens = detail::argmax_rows(step.log_probs);
    for (size_t i = 0; i < active.size(); ++i) {
      const int32_t token = tokens[i];
      if (token == config.eos_id) continue;
      out[size_t(active[i])].push_back(token);
      keep.push_back(int64_t(i));
      next_active.push_back(active[i]);
      next_prev.push_back(static_cast<float>(token));
    }
    if (keep.empty()) break;
    // Dropping finished rows is a copy of the state: only worth it when rows finished.
    if (keep.size() != active.size()) state->select(keep);
    active = std::move(next_active);
    prev = std::move(next_prev);
  }
  return out;
}

}  // namespace qkv::decode
