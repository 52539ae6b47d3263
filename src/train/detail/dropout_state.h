// The model's dropout counters, for checkpoints. nn::Dropout draws its masks from (seed,
// layer, counter); a resumed run continues bit-exactly only if every layer's counter is
// restored. The Seq2Seq interface exposes them as dropout_offsets() /
// set_dropout_offsets(); until a models build provides them, these helpers return nothing
// and accept only an empty list (resuming is then bit-exact only without dropout).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/models/seq2seq.h"

namespace qkv::train::detail {

template <class Model>
inline constexpr bool has_dropout_state = requires(Model& m, std::span<const uint64_t> s) {
  {m.dropout_offsets()};
  m.set_dropout_offsets(s);
};

// True when models::Seq2Seq exposes its dropout counters.
inline constexpr bool kModelsExposeDropoutState = has_dropout_state<models::Seq2Seq>;

template <class Model = models::Seq2Seq>
std::vector<uint64_t> dropout_offsets(const Model& model) {
  if constexpr (has_dropout_state<Model>) {
    const auto offsets = model.dropout_offsets();
    return {offsets.begin(), offsets.end()};
  } else {
    return {};
  }
}

template <class Model = models::Seq2Seq>
void restore_dropout_offsets(Model& model, std::span<const uint64_t> offsets,
                             const std::string& file) {
  if constexpr (has_dropout_state<Model>) {
    model.set_dropout_offsets(offsets);
  } else {
    QKV_CHECK(offsets.empty(), ConfigError, file, " holds ", offsets.size(),
              " dropout counters, but this build's models cannot restore them");
  }
}

}  // namespace qkv::train::detail
