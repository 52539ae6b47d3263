// Model files: parameters by name with the config as metadata.
#include "qkv/train/checkpoint.h"

#include "detail/metadata.h"
#include "detail/tensor_match.h"
#include "qkv/base/error.h"
#include "qkv/io/safetensors.h"

namespace qkv::train {
namespace {

constexpr const char* kModelFormat = "qkv-model";

std::vector<detail::ExpectedTensor> expected_parameters(const nn::ParameterStore& store,
                                                        const std::string& prefix = "") {
  std::vector<detail::ExpectedTensor> out;
  for (const nn::Parameter& p : store.parameters())
    out.push_back({prefix + p.name, p.variable.value().shape()});
  return out;
}

ModelFileInfo info_of(const io::SafetensorsFile& file, const std::filesystem::path& path) {
  const detail::Metadata& m = file.metadata;
  QKV_CHECK(m.count("config") != 0, ConfigError, path.string(),
            ": no model config in the metadata (not a qkv model file?)");
  ModelFileInfo info;
  try {
    info.config = models::from_json(m.at("config"));
  } catch (const ConfigError& e) {
    QKV_THROW(ConfigError, path.string(),
              ": the model config in the metadata is invalid: ", e.what());
  }
  // Optional, so a file exported from elsewhere with just a config loads too.
  if (m.count("qkv_version") != 0) info.qkv_version = m.at("qkv_version");
  info.vocab_file = m.count("vocab") != 0 ? m.at("vocab") : std::string(kVocabFile);
  if (m.count("update") != 0) info.update = detail::get_int(m, "update", path);
  return info;
}

// Validates every tensor of `file` against `model`, then copies them in.
void copy_parameters(models::Seq2Seq& model, const io::SafetensorsFile& file,
                     const std::filesystem::path& path) {
  const nn::ParameterStore& store = model.parameters();
  const std::vector<const Tensor*> tensors =
      detail::match_tensors(file, expected_parameters(store), path);
  for (size_t i = 0; i < tensors.size(); ++i)
    copy_into(*tensors[i], store.parameters()[i].variable.value());
}

}  // namespace

std::string qkv_version() {
  return QKV_TRAIN_VERSION;
}

void save_model(const models::Seq2Seq& model, const std::filesystem::path& path,
                const std::string& vocab_file, int64_t update) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const nn::Parameter& p : model.parameters().parameters()) {
    Tensor value = p.variable.value();
    if (value.dtype() != DType::F32) value = value.to(DType::F32);
    detail::check_finite(value, "cannot save " + path.string() + ": parameter '" + p.name + "'");
    tensors.emplace_back(p.name, value);
  }
  const detail::Metadata metadata = {{"format", kModelFormat},
                                     {"config", models::to_json(model.config())},
                                     {"qkv_version", qkv_version()},
                                     {"vocab", vocab_file},
                                     {"update", std::to_string(update)}};
  io::save_safetensors(path, tensors, metadata);
}

ModelFileInfo read_model_info(const std::filesystem::path& path) {
  return info_of(io::load_safetensors(path), path);
}

LoadedModel load_model(const std::filesystem::path& path, uint64_t seed) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  LoadedModel loaded;
  loaded.info = info_of(file, path);
  detail::check_config_fits(loaded.info.config, file, path, 1);
  loaded.model = models::make_model(loaded.info.config, seed);
  copy_parameters(*loaded.model, file, path);
  return loaded;
}

ModelFileInfo load_parameters(models::Seq2Seq& model, const std::filesystem::path& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  ModelFileInfo info = info_of(file, path);
  QKV_CHECK(info.config == model.config(), ConfigError, path.string(),
            " holds a model with config ", models::to_json(info.config),
            ", but the model to load into has ", models::to_json(model.config()));
  copy_parameters(model, file, path);
  return info;
}

}  // namespace qkv::train
