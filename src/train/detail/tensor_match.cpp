#include "detail/tensor_match.h"

#include <cmath>
#include <set>

#include "qkv/base/error.h"
#include "qkv/models/footprint.h"
#include "qkv/train/clip.h"

namespace qkv::train::detail {

void check_finite(const Tensor& t, const std::string& what) {
  const Tensor c = t.contiguous();
  int64_t bad = -1;
  if (c.dtype() == DType::F32) {
    bad = find_non_finite({c.data<float>(), size_t(c.numel())});
  } else {
    const double* d = c.data<double>();
    for (int64_t i = 0; i < c.numel() && bad < 0; ++i)
      if (!std::isfinite(d[i])) bad = i;
  }
  if (bad < 0) return;
  const double value =
      c.dtype() == DType::F32 ? double(c.data<float>()[bad]) : c.data<double>()[bad];
  QKV_THROW(ValueError, what, " ", describe(c), " holds ", value, " at element ", bad,
            ": non-finite values are never saved or loaded (the model diverged; resume from "
            "an earlier checkpoint with a lower --learn-rate)");
}

void check_config_fits(const models::ModelConfig& config, const io::SafetensorsFile& file,
                       const std::filesystem::path& path, int copies) {
  double stored = 0;
  for (const auto& [name, tensor] : file.tensors) stored += double(tensor.numel());
  const double parameters = models::footprint(config).parameters;
  const auto count = [](double x) {
    return x < 9e18 ? std::to_string(int64_t(x)) : std::string("more than 9e18");
  };
  QKV_CHECK(parameters * copies <= 2 * stored, IoError, path.string(),
            ": the model config in the metadata ('config') describes ", count(parameters),
            " parameters", copies > 1 ? " (" + std::to_string(copies) + " values each)" : "",
            ", but the file stores only ", count(stored),
            " values: the config does not belong to these tensors (was the metadata edited?); "
            "the model is not built");
}

std::vector<const Tensor*> match_tensors(const io::SafetensorsFile& file,
                                         const std::vector<ExpectedTensor>& expected,
                                         const std::filesystem::path& path) {
  std::set<std::string, std::less<>> names;
  std::vector<const Tensor*> out;
  out.reserve(expected.size());
  for (const ExpectedTensor& e : expected) {
    names.insert(e.name);
    const Tensor* t = file.find(e.name);
    QKV_CHECK(t != nullptr, IoError, path.string(), ": tensor '", e.name, "' ", e.shape,
              " is missing (the file does not match the model config; was it written for "
              "another model?)");
    QKV_CHECK(t->dtype() == DType::F32, IoError, path.string(), ": tensor '", e.name, "' is ",
              dtype_name(t->dtype()), ", expected ", dtype_name(DType::F32));
    QKV_CHECK(t->shape() == e.shape, IoError, path.string(), ": tensor '", e.name, "' has shape ",
              t->shape(), " but the model config needs ", e.shape);
    check_finite(*t, path.string() + ": tensor '" + e.name + "'");
    out.push_back(t);
  }
  for (const auto& [name, tensor] : file.tensors)
    QKV_CHECK(names.count(name) != 0, IoError, path.string(), ": unexpected tensor '", name, "' ",
              tensor.shape(),
              " (the model config has no such parameter; was the file written "
              "for another model?)");
  return out;
}

}  // namespace qkv::train::detail
