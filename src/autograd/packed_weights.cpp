#include "qkv/autograd/packed_weights.h"

#include <algorithm>
#include <vector>

namespace qkv::autograd {
namespace {

thread_local PackedWeightsScope* t_scope = nullptr;

}  // namespace

struct PackedWeightsScope::Entries {
  struct Entry {
    std::vector<Variable> weights;  // the key, held alive
    const void* data;               // the first weight's storage when packed
    ops::PackedWeight packed;
  };
  std::vector<Entry> list;  // a decoder has a few dozen weights: a linear scan is enough
};

PackedWeightsScope::PackedWeightsScope()
    : entries_(std::make_unique<Entries>()), previous_(t_scope) {
  t_scope = this;
}

PackedWeightsScope::~PackedWeightsScope() {
  t_scope = previous_;
}

int64_t PackedWeightsScope::packed_count() const noexcept {
  return int64_t(entries_->list.size());
}

const ops::PackedWeight* packed_weight(std::span<const Variable> weights,
                                       const TensorView& stacked) {
  if (t_scope == nullptr || grad_mode_enabled() || weights.empty()) return nullptr;
  for (const Variable& w : weights)
    if (!w.defined() || !w.requires_grad()) return nullptr;
  auto same = [&](const PackedWeightsScope::Entries::Entry& e) {
    return e.weights.size() == weights.size() &&
           std::equal(weights.begin(), weights.end(), e.weights.begin(),
                      [](const Variable& a, const Variable& b) { return a.same_as(b); });
  };
  auto& list = t_scope->entries_->list;
  const auto it = std::find_if(list.begin(), list.end(), same);
  // A parameter whose tensor was replaced (set_value) is packed again.
  const void* data = weights.front().value().view().raw_data();
  if (it != list.end() && it->data == data) return &it->packed;
  ops::PackedWeight packed(stacked);
  if (it != list.end()) {
    it->data = data;
    it->packed = std::move(packed);
    return &it->packed;
  }
  list.push_back({{weights.begin(), weights.end()}, data, std::move(packed)});
  return &list.back().packed;
}

}  // namespace qkv::autograd
