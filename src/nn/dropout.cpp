#include "qkv/nn/dropout.h"

#include "detail/name_hash.h"
#include "qkv/autograd/functions.h"

namespace qkv::nn {

Dropout::Dropout(const ParameterStore& store, const std::string& prefix, double p)
    : name_(prefix),
      p_(p),
      seed_(store.seed()),
      stream_(detail::name_stream(prefix)),
      offset_(store.register_dropout_counter()) {
  QKV_CHECK(p >= 0.0 && p < 1.0, ConfigError, "Dropout ", prefix, ": p ", p, " is outside [0, 1)");
}

autograd::Variable Dropout::forward(const autograd::Variable& x) {
  if (!training_ || p_ == 0.0) return x;
  const ops::DropoutOptions options{p_, seed_, stream_, *offset_};
  // The next call draws from fresh counters: successive calls (steps, batches) get
  // independent masks.
  *offset_ += uint64_t(x.value().numel());
  return autograd::dropout(x, options);
}

autograd::Variable Dropout::add_to(const autograd::Variable& residual,
                                   const autograd::Variable& x) {
  if (!training_ || p_ == 0.0) return autograd::add(residual, x);
  const ops::DropoutOptions options{p_, seed_, stream_, *offset_};
  *offset_ += uint64_t(x.value().numel());
  return autograd::dropout_add(residual, x, options);
}

}  // namespace qkv::nn
