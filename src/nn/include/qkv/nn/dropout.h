// Inverted dropout (Srivastava et al. 2014) as a layer with a train/eval switch. Masks
// are counter-based (see ops/dropout.h): they come from the store's seed, a stream of
// this layer's own (a hash of its name, so no two layers share masks) and an offset that
// every call advances by the number of elements. The same calls in the same order give
// the same masks, for any thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "qkv/nn/parameters.h"

namespace qkv::nn {

class Dropout {
 public:
  // p in [0, 1) (else ConfigError naming the layer). No parameters: the store provides
  // the seed. Starts in training mode, like PyTorch modules.
  Dropout(const ParameterStore& store, const std::string& prefix, double p);

  // x [...] -> [...]: x ⊙ mask / (1 − p) in training mode; x itself in eval mode or
  // when p = 0 (then nothing is recorded and the offset stays).
  autograd::Variable forward(const autograd::Variable& x);
  // residual + forward(x) (a residual connection), as one op in training mode
  // (autograd::dropout_add): the same masks, offsets and bits.
  autograd::Variable add_to(const autograd::Variable& residual, const autograd::Variable& x);

  void set_training(bool training) noexcept { training_ = training; }
  bool training() const noexcept { return training_; }
  double p() const noexcept { return p_; }
  // The mask counter, for checkpoints: restoring it resumes the same masks. The cell is
  // registered in the store (ParameterStore::dropout_counters saves every layer's).
  uint64_t offset() const noexcept { return *offset_; }
  void set_offset(uint64_t offset) noexcept { *offset_ = offset; }

 private:
  std::string name_;
  double p_;
  uint64_t seed_, stream_;
  std::shared_ptr<uint64_t> offset_;
  bool training_ = true;
};

}  // namespace qkv::nn
