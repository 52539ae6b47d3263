// The training state file: Adam's moments per parameter, and the progress counters as
// metadata.
#include <algorithm>
#include <cmath>

#include "qkv/base/error.h"
#include "qkv/io/safetensors.h"
#include "qkv/models/file_checks.h"
#include "qkv/train/checkpoint.h"

namespace qkv::train {
namespace {

namespace file_checks = models::file_checks;

constexpr const char* kStateFormat = "qkv-train-state";
constexpr const char* kFirstMoment = "adam.m.";
constexpr const char* kSecondMoment = "adam.v.";

// The slice of a moment arena [size] that belongs to parameter p, as [p's shape].
Tensor moment_slice(std::span<const float> arena, const nn::Parameter& p) {
  const Shape& shape = p.variable.value().shape();
  return Tensor::from(shape, arena.subspan(size_t(p.offset), size_t(shape.numel())));
}

file_checks::Metadata progress_metadata(const TrainProgress& p, const Adam& adam) {
  return {
      {"format", kStateFormat},
      {"qkv_version", qkv_version()},
      {"update", std::to_string(p.update)},
      {"micro_batches", std::to_string(p.micro_batches)},
      {"adam_step", std::to_string(adam.step_count())},
      {"tokens_seen", std::to_string(p.tokens_seen)},
      {"wall_seconds", file_checks::format_double(p.wall_seconds)},
      {"rng.model_seed", std::to_string(p.model_seed)},
      {"rng.dropout_offsets", file_checks::format_list(p.dropout_offsets)},
      {"data.seed", std::to_string(p.position.seed)},
      {"data.epoch", std::to_string(p.position.epoch)},
      {"data.index", std::to_string(p.position.index)},
      {"data.fingerprint", std::to_string(p.position.fingerprint)},
      {"guard.consecutive", std::to_string(p.guard_consecutive)},
      {"guard.total", std::to_string(p.guard_total)},
      {"valid.count", std::to_string(p.validations)},
      {"valid.best_loss", p.best_valid_loss ? file_checks::format_double(*p.best_valid_loss) : ""},
      {"valid.best_bleu", file_checks::format_double(p.best_valid_bleu)},
      {"valid.stalled", std::to_string(p.stalled_validations)},
      {"valid.seconds", file_checks::format_double(p.valid_seconds)}};
}

TrainProgress parse_progress(const file_checks::Metadata& m, const std::filesystem::path& path) {
  using file_checks::get_double;
  using file_checks::get_int;
  using file_checks::get_uint;
  QKV_CHECK(m.count("format") != 0 && m.at("format") == kStateFormat, IoError, path.string(),
            ": not a qkv training state (metadata 'format' is not '", kStateFormat, "')");
  TrainProgress p;
  p.update = get_int(m, "update", path);
  // Files of qkv before --accumulate: one micro-batch per update.
  p.micro_batches = m.count("micro_batches") != 0 ? get_int(m, "micro_batches", path) : p.update;
  p.tokens_seen = get_int(m, "tokens_seen", path);
  p.wall_seconds = get_double(m, "wall_seconds", path);
  p.model_seed = get_uint(m, "rng.model_seed", path);
  p.dropout_offsets = file_checks::get_list(m, "rng.dropout_offsets", path);
  p.position = {.seed = get_uint(m, "data.seed", path),
                .epoch = get_uint(m, "data.epoch", path),
                .index = get_uint(m, "data.index", path),
                .fingerprint = get_uint(m, "data.fingerprint", path)};
  const int64_t consecutive = get_int(m, "guard.consecutive", path);
  QKV_CHECK(consecutive >= 0 && consecutive < (int64_t{1} << 30), IoError, path.string(),
            ": metadata key 'guard.consecutive' = ", consecutive, " is out of range");
  p.guard_consecutive = int(consecutive);
  p.guard_total = get_int(m, "guard.total", path);
  p.validations = get_int(m, "valid.count", path);
  if (!file_checks::get_string(m, "valid.best_loss", path).empty())
    p.best_valid_loss = get_double(m, "valid.best_loss", path);
  p.best_valid_bleu = get_double(m, "valid.best_bleu", path);
  p.stalled_validations = get_int(m, "valid.stalled", path);
  // Files of qkv before validation time was counted apart: none counted.
  if (m.count("valid.seconds") != 0) {
    p.valid_seconds = get_double(m, "valid.seconds", path);
    QKV_CHECK(
        std::isfinite(p.valid_seconds) && p.valid_seconds >= 0 && p.valid_seconds <= p.wall_seconds,
        IoError, path.string(), ": metadata key 'valid.seconds' = ", p.valid_seconds,
        " is not within [0, wall_seconds = ", p.wall_seconds, "]");
  }
  using Counter = std::pair<const char*, int64_t>;
  for (const auto& [key, value] :
       {Counter{"update", p.update}, Counter{"micro_batches", p.micro_batches},
        Counter{"tokens_seen", p.tokens_seen}, Counter{"guard.total", p.guard_total},
        Counter{"valid.count", p.validations}, Counter{"valid.stalled", p.stalled_validations}})
    QKV_CHECK(value >= 0, IoError, path.string(), ": metadata key '", key, "' = ", value,
              " is negative");
  return p;
}

}  // namespace

void save_train_state(const std::filesystem::path& path, const TrainProgress& progress,
                      const models::Seq2Seq& model, const Adam& adam) {
  const nn::ParameterStore& store = model.parameters();
  QKV_CHECK(adam.size() == store.numel(), ShapeError, "save_train_state: the optimizer has ",
            adam.size(), " elements but the model ", store.numel());
  std::vector<std::pair<std::string, Tensor>> tensors;
  const std::string where = "cannot save " + path.string() + ": ";
  for (const nn::Parameter& p : store.parameters()) {
    Tensor value = p.variable.value();
    if (value.dtype() != DType::F32) value = value.to(DType::F32);
    file_checks::check_finite(value, where + "parameter '" + p.name + "'");
    tensors.emplace_back(p.name, std::move(value));
  }
  for (const auto& [prefix, arena] : {std::pair{kFirstMoment, adam.first_moment()},
                                      std::pair{kSecondMoment, adam.second_moment()}}) {
    for (const nn::Parameter& p : store.parameters()) {
      Tensor t = moment_slice(arena, p);
      file_checks::check_finite(t, where + "optimizer moment '" + prefix + p.name + "'");
      tensors.emplace_back(prefix + p.name, std::move(t));
    }
  }
  file_checks::Metadata metadata = progress_metadata(progress, adam);
  metadata["config"] = models::to_json(model.config());
  io::save_safetensors(path, tensors, metadata);
}

RestoredTraining load_train_state(const std::filesystem::path& path,
                                  const AdamOptions& adam_options) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  const TrainProgress progress = parse_progress(file.metadata, path);
  const int64_t step = file_checks::get_int(file.metadata, "adam_step", path);
  QKV_CHECK(step >= 0 && step <= progress.update, IoError, path.string(),
            ": metadata key 'adam_step' = ", step, " is outside [0, update = ", progress.update,
            "]");
  models::ModelConfig config;
  try {
    config = models::from_json(file_checks::get_string(file.metadata, "config", path));
  } catch (const ConfigError& e) {
    QKV_THROW(ConfigError, path.string(),
              ": the model config in the metadata is invalid: ", e.what());
  }
  file_checks::check_config_fits(config, file, path, 3);  // parameters and Adam's two moments
  std::unique_ptr<models::Seq2Seq> model = models::make_model(config, progress.model_seed);
  const nn::ParameterStore& store = model->parameters();

  std::vector<file_checks::ExpectedTensor> expected;
  for (const char* prefix : {"", kFirstMoment, kSecondMoment})
    for (const nn::Parameter& p : store.parameters())
      expected.push_back({prefix + p.name, p.variable.value().shape()});
  const std::vector<const Tensor*> tensors = file_checks::match_tensors(file, expected, path);

  Adam adam(store.numel(), adam_options);
  const size_t n = store.parameters().size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const nn::Parameter& p = store.parameters()[i % n];
    if (i < n) {
      copy_into(*tensors[i], p.variable.value());
      continue;
    }
    std::span<float> arena = i < 2 * n ? adam.first_moment() : adam.second_moment();
    const float* src = tensors[i]->data<float>();
    if (i >= 2 * n) {  // named here; Adam::check_state below knows only arena offsets
      const float* negative =
          std::find_if(src, src + tensors[i]->numel(), [](float v) { return v < 0.0f; });
      QKV_CHECK(negative == src + tensors[i]->numel(), ValueError, path.string(), ": tensor '",
                kSecondMoment, p.name, "' holds ", *negative, " at element ", negative - src,
                ": Adam's second moments are never negative (a corrupt checkpoint; resume from "
                "an earlier one)");
    }
    std::copy(src, src + tensors[i]->numel(), arena.begin() + p.offset);
  }
  adam.set_step_count(step);
  try {
    adam.check_state();
  } catch (const ValueError& e) {
    QKV_THROW(ValueError, path.string(), ": ", e.what());
  }
  return {std::move(model), std::move(adam), progress};
}

}  // namespace qkv::train
