#include "qkv/nn/positions.h"

#include <cmath>

#include "qkv/autograd/functions.h"

namespace qkv::nn {

SinusoidalPositions::SinusoidalPositions(const ParameterStore& store, const std::string& prefix,
                                         int64_t max_len, int64_t dim)
    : name_(prefix) {
  QKV_CHECK(max_len > 0 && dim > 0, ConfigError, "SinusoidalPositions ", prefix, ": max_len ",
            max_len, " and dim ", dim, " must be positive");
  Tensor table = Tensor::empty({max_len, dim}, DType::F64);
  double* pe = table.data<double>();
  for (int64_t p = 0; p < max_len; ++p)
    for (int64_t c = 0; c < dim; ++c) {
      // Columns 2i and 2i + 1 share the frequency 1 / 10000^(2i/dim).
      const double angle = double(p) / std::pow(10000.0, double(c - c % 2) / double(dim));
      pe[p * dim + c] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  table_ = table.to(store.dtype());
}

autograd::Variable SinusoidalPositions::forward(const autograd::Variable& x, int64_t offset) const {
  const Shape& s = x.value().shape();
  const int64_t max_len = table_.dim(0), dim = table_.dim(1);
  QKV_CHECK(s.rank() == 3 && s[2] == dim, ShapeError, "SinusoidalPositions ", name_, ": x ",
            describe(x.value()), " must be [B, T, ", dim, "]");
  QKV_CHECK(offset >= 0 && offset + s[1] <= max_len, ValueError, "SinusoidalPositions ", name_,
            ": positions [", offset, ", ", offset + s[1], ") exceed max_len ", max_len,
            " (raise max_len)");
  // Adding PE [T, dim] to every batch entry is a bias over the flattened [B, T·dim].
  const Tensor rows = table_.slice(0, offset, offset + s[1]).reshape({s[1] * dim});
  const autograd::Variable flat = autograd::reshape(x, {s[0], s[1] * dim});
  return autograd::reshape(autograd::add_bias(flat, autograd::Variable(rows)), s);
}

}  // namespace qkv::nn
