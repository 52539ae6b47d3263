// The model directory (`qkv train --model DIR`) and the files in it:
//
//   model.safetensors        every parameter by name, float32; metadata: the ModelConfig
//                            as JSON ("config"), the qkv version, the vocabulary file name,
//                            the update it was saved at. Loads on its own (translation) and
//                            from Python (safetensors, numpy).
//   model.best.safetensors   the same, for the best validation score so far.
//   vocab.spm                the SentencePiece model the ids refer to.
//   train_state.safetensors  everything resuming needs, in one file: the parameters again,
//                            Adam's two moments per parameter ("adam.m.<name>",
//                            "adam.v.<name>") and, as metadata, the config, the step count,
//                            the random state (model seed and dropout counters), the data
//                            position, the non-finite guard's counters, early-stopping
//                            state and progress counters.
//
// Every file is written with io::save_safetensors / io::write_file_atomically (temporary
// file, fsync, rename): a crash leaves the previous file whole. Nothing non-finite is ever
// written: saving checks first and throws instead.
//
// Loading validates against the model config before anything is used: a tensor missing
// or extra, a dtype or shape that differs, a non-finite value, broken config JSON. Errors
// name the file and the tensor or key:
//   IoError      unreadable or malformed file (truncated, bad header, ...), a tensor
//                missing or extra, a dtype or shape that differs from the config's model,
//                a config describing a model over twice the size of the file's tensors
//                (refused before that model is built: a file cannot make qkv allocate far
//                more than its own size);
//   ConfigError  the config JSON is malformed or out of range (e.g. max_positions above
//                models::kMaxPositionsLimit), or belongs to another model;
//   ValueError   a non-finite value (NaN/Inf) in a parameter or optimizer moment, a
//                negative second moment.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qkv/data/batcher.h"
#include "qkv/models/seq2seq.h"
#include "qkv/train/optimizer.h"

namespace qkv::train {

inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kBestModelFile = "model.best.safetensors";
inline constexpr const char* kVocabFile = "vocab.spm";
inline constexpr const char* kTrainStateFile = "train_state.safetensors";

// "0.1.0": the version written into every file.
std::string qkv_version();

// What a model file says about itself besides its tensors.
struct ModelFileInfo {
  models::ModelConfig config;
  std::string qkv_version;
  std::string vocab_file;  // relative to the model file's directory
  int64_t update = 0;      // training update it was saved at (0: not from training)
};

// Writes every parameter of `model` (each once; tied names are stored under the name
// that owns them) to `path` as float32, with info's metadata (info.config is taken from
// the model). ValueError naming the parameter and element if any value is NaN/Inf, and
// then nothing is written; IoError if writing fails (the previous file stays).
void save_model(const models::Seq2Seq& model, const std::filesystem::path& path,
                const std::string& vocab_file = kVocabFile, int64_t update = 0);

// The metadata of a model file, its config validated (ConfigError naming the file).
ModelFileInfo read_model_info(const std::filesystem::path& path);

// A model built from the config stored in `path`, with the file's parameters (see the
// errors above). `seed` seeds the model's dropout (initial values are all overwritten).
struct LoadedModel {
  std::unique_ptr<models::Seq2Seq> model;
  ModelFileInfo info;
};
LoadedModel load_model(const std::filesystem::path& path, uint64_t seed = 0);

// Copies the parameters stored in `path` into `model`, whose config must equal the
// file's (ConfigError otherwise). Validates everything before writing into the model, so
// on error the model is unchanged. Returns the file's info.
ModelFileInfo load_parameters(models::Seq2Seq& model, const std::filesystem::path& path);

// Training progress besides the parameters and the optimizer: everything a run needs to
// continue bit-exactly, and its counters.
struct TrainProgress {
  int64_t update = 0;       // batches processed (applied or skipped as non-finite)
  int64_t tokens_seen = 0;  // source + target tokens of those batches
  double wall_seconds = 0;  // training time used, summed over every session
  // Random state: the seed the model was built with (its dropout masks derive from it)
  // and the model's dropout counters (Seq2Seq dropout state; empty when not exposed).
  uint64_t model_seed = 0;
  std::vector<uint64_t> dropout_offsets;
  data::BatchPosition position;           // the next training batch (its epoch: epochs done)
  int guard_consecutive = 0;              // NonFiniteGuard: non-finite updates in a row
  int64_t guard_total = 0;                // ... in total
  int64_t validations = 0;                // validations run
  std::optional<double> best_valid_loss;  // lowest validation cross-entropy per token
  double best_valid_bleu = 0;             // BLEU at that validation
  int64_t stalled_validations = 0;        // validations since the best one (early stopping)
};

// Writes everything resuming needs into one file: the parameters of `model` (by name, as
// in a model file), Adam's moments per parameter ("adam.m.<name>", "adam.v.<name>"), and
// as metadata the model config, the optimizer's step count and `progress`. One atomic
// file, so the state is never half old, half new. ValueError if a value is non-finite
// (nothing written), ShapeError if the optimizer's size differs from the model's.
void save_train_state(const std::filesystem::path& path, const TrainProgress& progress,
                      const models::Seq2Seq& model, const Adam& adam);

// A run restored from a train state: the model (built from the stored config with the
// stored seed, so its dropout masks continue), an optimizer with `adam_options` and the
// stored moments and step count, and the progress. Errors as described at the top.
struct RestoredTraining {
  std::unique_ptr<models::Seq2Seq> model;
  Adam adam;
  TrainProgress progress;
};
RestoredTraining load_train_state(const std::filesystem::path& path,
                                  const AdamOptions& adam_options);

}  // namespace qkv::train
