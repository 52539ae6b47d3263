// Metadata values and tensor checks shared by model files and training states.
#include "qkv/models/file_checks.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <system_error>

#include "qkv/base/error.h"
#include "qkv/base/format.h"
#include "qkv/models/footprint.h"

namespace qkv::models::file_checks {
namespace {

template <class T>
T parse(const std::string& text, const std::string& key, const std::filesystem::path& file,
        const char* what) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  QKV_CHECK(ec == std::errc() && ptr == end && !text.empty(), IoError, file.string(),
            ": metadata key '", key, "' is not ", what, ": '", text, "'");
  return value;
}

}  // namespace

std::string format_double(double value) {
  return format_significant(value, 17);
}

std::string format_list(const std::vector<uint64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

const std::string& get_string(const Metadata& m, const std::string& key,
                              const std::filesystem::path& file) {
  const auto it = m.find(key);
  QKV_CHECK(it != m.end(), IoError, file.string(), ": metadata key '", key,
            "' is missing (not written by this version of qkv, or damaged)");
  return it->second;
}

int64_t get_int(const Metadata& m, const std::string& key, const std::filesystem::path& file) {
  return parse<int64_t>(get_string(m, key, file), key, file, "an integer");
}

uint64_t get_uint(const Metadata& m, const std::string& key, const std::filesystem::path& file) {
  return parse<uint64_t>(get_string(m, key, file), key, file, "a non-negative integer");
}

double get_double(const Metadata& m, const std::string& key, const std::filesystem::path& file) {
  return parse<double>(get_string(m, key, file), key, file, "a number");
}

std::vector<uint64_t> get_list(const Metadata& m, const std::string& key,
                               const std::filesystem::path& file) {
  const std::string& text = get_string(m, key, file);
  std::vector<uint64_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(parse<uint64_t>(text.substr(start, comma - start), key, file,
                                  "a list of non-negative integers"));
    start = comma + 1;
    QKV_CHECK(comma == text.size() || start < text.size(), IoError, file.string(),
              ": metadata key '", key, "' ends with a comma");
  }
  return out;
}

void check_finite(const Tensor& t, const std::string& what) {
  const Tensor c = t.contiguous();
  int64_t bad = -1;
  if (c.dtype() == DType::F32) {
    const float* f = c.data<float>();
    for (int64_t i = 0; i < c.numel() && bad < 0; ++i)
      if (!std::isfinite(f[i])) bad = i;
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
            "an earlier checkpoint with a lower learning rate)");
}

void check_config_fits(const models::ModelConfig& config, const io::SafetensorsFile& file,
                       const std::filesystem::path& path, int copies) {
  double stored = 0;
  for (const auto& [name, tensor] : file.tensors) stored += double(tensor.numel());
  const double parameters = footprint(config).parameters;
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

}  // namespace qkv::models::file_checks
