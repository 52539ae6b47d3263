// Model files: parameters by name with the config as metadata.
#include "qkv/models/model_file.h"

#include "qkv/base/error.h"
#include "qkv/io/safetensors.h"
#include "qkv/models/file_checks.h"

namespace qkv::models {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModelFormat = "qkv-model";

std::vector<file_checks::ExpectedTensor> expected_parameters(const nn::ParameterStore& store) {
  std::vector<file_checks::ExpectedTensor> out;
  for (const nn::Parameter& p : store.parameters())
    out.push_back({p.name, p.variable.value().shape()});
  return out;
}

// The vocab_* keys; all or none (a partial stamp is a damaged file: IoError naming the key).
std::optional<VocabStamp> stamp_of(const file_checks::Metadata& m, const fs::path& path) {
  if (m.count("vocab_fingerprint") == 0) return std::nullopt;
  return VocabStamp{.fingerprint = m.at("vocab_fingerprint"),
                    .size = file_checks::get_int(m, "vocab_size", path),
                    .pad_id = file_checks::get_int(m, "vocab_pad_id", path),
                    .unk_id = file_checks::get_int(m, "vocab_unk_id", path),
                    .bos_id = file_checks::get_int(m, "vocab_bos_id", path),
                    .eos_id = file_checks::get_int(m, "vocab_eos_id", path)};
}

void add_stamp(file_checks::Metadata& m, const VocabStamp& stamp) {
  m["vocab_fingerprint"] = stamp.fingerprint;
  m["vocab_size"] = std::to_string(stamp.size);
  m["vocab_pad_id"] = std::to_string(stamp.pad_id);
  m["vocab_unk_id"] = std::to_string(stamp.unk_id);
  m["vocab_bos_id"] = std::to_string(stamp.bos_id);
  m["vocab_eos_id"] = std::to_string(stamp.eos_id);
}

ModelFileInfo info_of(const io::SafetensorsFile& file, const fs::path& path) {
  const file_checks::Metadata& m = file.metadata;
  QKV_CHECK(m.count("config") != 0, ConfigError, path.string(),
            ": no model config in the metadata (not a qkv model file?)");
  ModelFileInfo info;
  try {
    info.config = from_json(m.at("config"));
  } catch (const ConfigError& e) {
    QKV_THROW(ConfigError, path.string(),
              ": the model config in the metadata is invalid: ", e.what());
  }
  // Optional, so a file exported from elsewhere with just a config loads too.
  if (m.count("qkv_version") != 0) info.qkv_version = m.at("qkv_version");
  info.vocab_file = m.count("vocab") != 0 ? m.at("vocab") : std::string(kVocabFile);
  if (m.count("update") != 0) info.update = file_checks::get_int(m, "update", path);
  info.vocab_stamp = stamp_of(m, path);
  return info;
}

// Validates every tensor of `file` against `model`, then copies them in.
void copy_parameters(Seq2Seq& model, const io::SafetensorsFile& file, const fs::path& path) {
  const nn::ParameterStore& store = model.parameters();
  const std::vector<const Tensor*> tensors =
      file_checks::match_tensors(file, expected_parameters(store), path);
  for (size_t i = 0; i < tensors.size(); ++i)
    copy_into(*tensors[i], store.parameters()[i].variable.value());
}

}  // namespace

std::string qkv_version() {
  return QKV_MODELS_VERSION;
}

void save_model(const Seq2Seq& model, const fs::path& path, const std::string& vocab_file,
                int64_t update, const std::optional<VocabStamp>& vocab_stamp) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const nn::Parameter& p : model.parameters().parameters()) {
    Tensor value = p.variable.value();
    if (value.dtype() != DType::F32) value = value.to(DType::F32);
    file_checks::check_finite(value,
                              "cannot save " + path.string() + ": parameter '" + p.name + "'");
    tensors.emplace_back(p.name, value);
  }
  file_checks::Metadata metadata = {{"format", kModelFormat},
                                    {"config", to_json(model.config())},
                                    {"qkv_version", qkv_version()},
                                    {"vocab", vocab_file},
                                    {"update", std::to_string(update)}};
  if (vocab_stamp) add_stamp(metadata, *vocab_stamp);
  io::save_safetensors(path, tensors, metadata);
}

ModelFileInfo read_model_info(const fs::path& path) {
  return info_of(io::load_safetensors(path), path);
}

LoadedModel load_model(const fs::path& path, uint64_t seed) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  LoadedModel loaded;
  loaded.info = info_of(file, path);
  file_checks::check_config_fits(loaded.info.config, file, path, 1);
  loaded.model = make_model(loaded.info.config, seed);
  copy_parameters(*loaded.model, file, path);
  return loaded;
}

ModelFileInfo load_parameters(Seq2Seq& model, const fs::path& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  ModelFileInfo info = info_of(file, path);
  QKV_CHECK(info.config == model.config(), ConfigError, path.string(),
            " holds a model with config ", to_json(info.config),
            ", but the model to load into has ", to_json(model.config()));
  copy_parameters(model, file, path);
  return info;
}

ModelPathKind model_path_kind(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return fs::exists(path / kModelFile, ec) ? ModelPathKind::Directory
                                             : ModelPathKind::DirectoryWithoutModel;
  return fs::exists(path, ec) ? ModelPathKind::File : ModelPathKind::Missing;
}

fs::path model_file_at(const fs::path& path) {
  switch (model_path_kind(path)) {
    case ModelPathKind::File:
      return path;
    case ModelPathKind::Directory:
      return path / kModelFile;
    case ModelPathKind::DirectoryWithoutModel:
      QKV_THROW(IoError, path.string(), ": no ", kModelFile,
                " in this directory (a model directory written by training, or a model file)");
    case ModelPathKind::Missing:
      break;
  }
  QKV_THROW(IoError, path.string(), ": no such model directory or file");
}

}  // namespace qkv::models
