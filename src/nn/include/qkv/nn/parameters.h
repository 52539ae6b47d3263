// The parameter store: every parameter of a model in ONE flat contiguous value arena,
// and every gradient in a second one, so an optimizer, gradient clipping or zero_grad is
// one vectorised loop over all parameters (as llm.c does).
//
// Each parameter is an autograd::Variable whose value is a view of its slice of the value
// arena and whose gradient is bound to its slice of the gradient arena
// (Variable::bind_storage): backward accumulates straight into the arena. Parameters have
// hierarchical names ("encoder.layer0.attn.q_proj.weight"), are kept in registration
// order, and can be tied: a second name for the same parameter, stored once, whose uses
// all add into one gradient.
//
// Initial values depend only on (store seed, parameter name, element index) (Philox, see
// base/rng.h): adding a layer never changes another layer's initial values.
//
// The arenas grow while layers register (capacity doubles, values and gradients are
// copied and every parameter is rebound). Register everything before training: a Tensor
// taken from value() before a later add() still shows the old copy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/autograd/variable.h"

namespace qkv::nn {

enum class Init {
  Zeros,          // biases; LayerNorm beta
  Ones,           // LayerNorm gamma
  XavierUniform,  // weights [fan_out, fan_in]: U(±sqrt(6 / (fan_in + fan_out)))
                  // (Glorot & Bengio 2010, eq. 16): keeps activation and gradient variance
  Normal,         // N(0, scale²); embeddings use scale = 1/sqrt(E), so E·scale² = 1 and
                  // a row scaled by sqrt(E) (Vaswani et al. 2017, sec. 3.4) has unit entries
  Uniform,        // U(±scale), e.g. PyTorch's RNN default scale = 1/sqrt(H)
};

struct InitSpec {
  Init kind = Init::Zeros;
  double scale = 0.0;  // Normal: the standard deviation; Uniform: the bound
  // XavierUniform: the rows stack `blocks` matrices that act separately (the 3 GRU or 4
  // LSTM gates), so fan_out = rows / blocks: each gate gets Glorot's variance.
  int64_t blocks = 1;
};

inline InitSpec zeros_init() {
  return {Init::Zeros};
}
inline InitSpec ones_init() {
  return {Init::Ones};
}
inline InitSpec xavier_uniform_init(int64_t blocks = 1) {
  return {Init::XavierUniform, 0.0, blocks};
}
inline InitSpec normal_init(double stddev) {
  return {Init::Normal, stddev};
}
inline InitSpec uniform_init(double bound) {
  return {Init::Uniform, bound};
}

// "prefix.name", or "name" when prefix is empty: how layers name their parameters.
std::string child_name(std::string_view prefix, std::string_view name);

struct Parameter {
  std::string name;
  autograd::Variable variable;  // value [shape], a view into the arena; grad bound
  int64_t offset = 0;           // first element in values() and grads()
};

class ParameterStore {
 public:
  // dtype: F32 for training, F64 for gradient checks. seed: the initialisation (and, for
  // layers that ask, dropout) random stream.
  explicit ParameterStore(uint64_t seed = 0, DType dtype = DType::F32);
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  // Registers a parameter [shape] under `name` (segments of [A-Za-z0-9_] joined by '.',
  // else ConfigError), initialised per `init`, requiring grad. When `name` is an alias
  // made by tie(), returns the tied parameter (ShapeError unless its shape is `shape`).
  // ConfigError for a name registered before, a bad init (XavierUniform needs rank 2 and
  // rows divisible by blocks; Normal/Uniform a finite scale >= 0).
  autograd::Variable add(const std::string& name, const Shape& shape, const InitSpec& init);

  // Makes `alias` a second name of the registered parameter `target`: get(alias) and a
  // later add(alias, ...) return it. ConfigError when target is unknown or alias taken.
  void tie(const std::string& alias, const std::string& target);

  // The parameter (or tied alias) called `name`; ConfigError naming it when unknown.
  const autograd::Variable& get(std::string_view name) const;
  bool contains(std::string_view name) const;

  // Unique parameters in registration order (aliases are not repeated).
  const std::vector<Parameter>& parameters() const noexcept { return params_; }
  // (alias, target) pairs in tie order.
  const std::vector<std::pair<std::string, std::string>>& aliases() const noexcept {
    return aliases_;
  }
  std::size_t size() const noexcept { return params_.size(); }
  int64_t numel() const noexcept { return used_; }  // total elements, each parameter once

  // The arenas, [numel()] each: parameter p occupies [p.offset, p.offset + p.numel).
  Tensor values() const;
  Tensor grads() const;
  // Zeros every gradient: one memset over the gradient arena.
  void zero_grad();

  uint64_t seed() const noexcept { return seed_; }
  DType dtype() const noexcept { return dtype_; }

  // Dropout mask counters of every Dropout layer built on this store, in construction
  // order: with the parameters and the seed they are the model's whole random state, so a
  // checkpoint saves them and a resumed run draws the same masks. Each Dropout registers
  // its counter cell at construction (a const store may register: the counters are state,
  // not parameters).
  std::shared_ptr<uint64_t> register_dropout_counter() const;
  std::vector<uint64_t> dropout_counters() const;
  // ValueError unless counters.size() equals the number of registered Dropout layers.
  void set_dropout_counters(std::span<const uint64_t> counters);

 private:
  void reserve(int64_t elements);
  void bind(const Parameter& p);

  uint64_t seed_;
  DType dtype_;
  Tensor values_;  // [capacity]
  Tensor grads_;   // [capacity]
  int64_t used_ = 0;
  std::vector<Parameter> params_;
  std::vector<std::pair<std::string, std::string>> aliases_;
  std::map<std::string, std::size_t, std::less<>> index_;  // names and aliases -> params_
  mutable std::vector<std::shared_ptr<uint64_t>> dropout_counters_;
};

}  // namespace qkv::nn
