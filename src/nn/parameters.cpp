#include "qkv/nn/parameters.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "detail/name_hash.h"
#include "qkv/base/rng.h"

namespace qkv::nn {
namespace {

void check_name(std::string_view name) {
  QKV_CHECK(!name.empty(), ConfigError, "parameter name is empty");
  size_t segment = 0;
  for (const char c : name) {
    if (c == '.') {
      QKV_CHECK(segment > 0, ConfigError, "parameter name \"", name, "\" has an empty segment");
      segment = 0;
      continue;
    }
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    QKV_CHECK(ok, ConfigError, "parameter name \"", name, "\" has the character '", c,
              "' (use [A-Za-z0-9_] segments joined by '.')");
    ++segment;
  }
  QKV_CHECK(segment > 0, ConfigError, "parameter name \"", name, "\" has an empty segment");
}

void check_init(std::string_view name, const Shape& shape, const InitSpec& init) {
  if (init.kind == Init::XavierUniform) {
    QKV_CHECK(shape.rank() == 2 && init.blocks >= 1 && shape[0] % init.blocks == 0, ConfigError,
              "parameter ", name, " ", shape, ": Xavier initialisation needs [fan_out, fan_in] ",
              "with rows divisible by blocks = ", init.blocks);
  }
  if (init.kind == Init::Normal || init.kind == Init::Uniform)
    QKV_CHECK(std::isfinite(init.scale) && init.scale >= 0, ConfigError, "parameter ", name,
              ": initialisation scale ", init.scale, " must be finite and >= 0");
}

// Initial values of `name` in float64 (converted to the store's dtype by the caller).
std::vector<double> initial_values(std::string_view name, const Shape& shape, const InitSpec& init,
                                   uint64_t seed) {
  const auto n = size_t(shape.numel());
  std::vector<double> v(n, 0.0);
  const CounterRng rng(seed, detail::name_stream(name));
  auto uniform_pm = [&](size_t i, double bound) {  // U(−bound, bound)
    return bound * (2.0 * double(rng.uniform(i)) - 1.0);
  };
  switch (init.kind) {
    case Init::Zeros:
      break;
    case Init::Ones:
      std::fill(v.begin(), v.end(), 1.0);
      break;
    case Init::XavierUniform: {
      const double fan_out = double(shape[0] / init.blocks), fan_in = double(shape[1]);
      const double bound = std::sqrt(6.0 / (fan_in + fan_out));
      for (size_t i = 0; i < n; ++i) v[i] = uniform_pm(i, bound);
      break;
    }
    case Init::Normal:
      for (size_t i = 0; i < n; ++i) v[i] = init.scale * double(rng.normal(i));
      break;
    case Init::Uniform:
      for (size_t i = 0; i < n; ++i) v[i] = uniform_pm(i, init.scale);
      break;
  }
  return v;
}

}  // namespace

std::string child_name(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  std::string out(prefix);
  out += '.';
  out += name;
  return out;
}

ParameterStore::ParameterStore(uint64_t seed, DType dtype)
    : seed_(seed),
      dtype_(dtype),
      values_(Tensor::zeros({0}, dtype)),
      grads_(Tensor::zeros({0}, dtype)) {}

void ParameterStore::reserve(int64_t elements) {
  const int64_t capacity = values_.numel();
  if (used_ + elements <= capacity) return;
  // Doubling keeps the copies amortised O(total) however many parameters a model has.
  const int64_t grown = std::max({2 * capacity, used_ + elements, int64_t{1024}});
  Tensor values = Tensor::zeros({grown}, dtype_), grads = Tensor::zeros({grown}, dtype_);
  const size_t bytes = size_t(used_) * dtype_size(dtype_);
  if (bytes > 0) {
    std::memcpy(values.view().raw_data(), values_.view().raw_data(), bytes);
    std::memcpy(grads.view().raw_data(), grads_.view().raw_data(), bytes);
  }
  values_ = values;
  grads_ = grads;
  for (const Parameter& p : params_) bind(p);
}

void ParameterStore::bind(const Parameter& p) {
  const Shape& shape = p.variable.value().shape();
  const int64_t end = p.offset + shape.numel();
  p.variable.bind_storage(values_.slice(0, p.offset, end).reshape(shape),
                          grads_.slice(0, p.offset, end).reshape(shape));
}

autograd::Variable ParameterStore::add(const std::string& name, const Shape& shape,
                                       const InitSpec& init) {
  check_name(name);
  if (const auto it = index_.find(name); it != index_.end()) {
    const bool is_alias = std::any_of(aliases_.begin(), aliases_.end(),
                                      [&](const auto& a) { return a.first == name; });
    QKV_CHECK(is_alias, ConfigError, "parameter ", name, " is registered twice");
    const autograd::Variable& tied = params_[it->second].variable;
    QKV_CHECK(tied.value().shape() == shape, ShapeError, "parameter ", name, " ", shape,
              " is tied to ", params_[it->second].name, " ", describe(tied.value()),
              ": shapes differ");
    return tied;
  }
  check_init(name, shape, init);
  const int64_t n = shape.numel();
  reserve(n);
  const int64_t offset = used_;
  used_ += n;
  const Tensor value = values_.slice(0, offset, offset + n).reshape(shape);
  const std::vector<double> init_values = initial_values(name, shape, init, seed_);
  copy_into(Tensor::from(shape, init_values), value);
  Parameter p{name, autograd::Variable(value, true), offset};
  bind(p);
  index_.emplace(name, params_.size());
  params_.push_back(p);
  return p.variable;
}

void ParameterStore::tie(const std::string& alias, const std::string& target) {
  check_name(alias);
  const auto it = index_.find(target);
  QKV_CHECK(it != index_.end(), ConfigError, "tie: parameter ", target,
            " is not registered (register it before tying ", alias, " to it)");
  QKV_CHECK(!index_.contains(alias), ConfigError, "tie: ", alias, " already names a parameter");
  const std::size_t i = it->second;
  index_.emplace(alias, i);
  aliases_.emplace_back(alias, params_[i].name);
}

const autograd::Variable& ParameterStore::get(std::string_view name) const {
  const auto it = index_.find(name);
  QKV_CHECK(it != index_.end(), ConfigError, "no parameter named ", name, " (", params_.size(),
            " registered)");
  return params_[it->second].variable;
}

bool ParameterStore::contains(std::string_view name) const {
  return index_.find(name) != index_.end();
}

Tensor ParameterStore::values() const {
  return values_.slice(0, 0, used_);
}

Tensor ParameterStore::grads() const {
  return grads_.slice(0, 0, used_);
}

void ParameterStore::zero_grad() {
  std::memset(grads_.view().raw_data(), 0, size_t(used_) * dtype_size(dtype_));
}

std::shared_ptr<uint64_t> ParameterStore::register_dropout_counter() const {
  dropout_counters_.push_back(std::make_shared<uint64_t>(0));
  return dropout_counters_.back();
}

std::vector<uint64_t> ParameterStore::dropout_counters() const {
  std::vector<uint64_t> out;
  out.reserve(dropout_counters_.size());
  for (const auto& c : dropout_counters_) out.push_back(*c);
  return out;
}

void ParameterStore::set_dropout_counters(std::span<const uint64_t> counters) {
  QKV_CHECK(counters.size() == dropout_counters_.size(), ValueError,
            "ParameterStore: ", counters.size(), " dropout counters given for ",
            dropout_counters_.size(), " dropout layers (a checkpoint of another model?)");
  for (size_t i = 0; i < counters.size(); ++i) *dropout_counters_[i] = counters[i];
}

}  // namespace qkv::nn
