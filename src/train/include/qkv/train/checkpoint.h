// The training state in the model directory (`qkv train --model DIR`):
//
//   train_state.safetensors  everything resuming needs, in one file: the parameters again,
//                            Adam's two moments per parameter ("adam.m.<name>",
//                            "adam.v.<name>") and, as metadata, the config, the step count,
//                            the random state (model seed and dropout counters), the data
//                            position, the non-finite guard's counters, early-stopping
//                            state and progress counters.
//
// The model files beside it (model.safetensors, model.best.safetensors, vocab.spm) are
// models' (qkv/models/model_file.h), so that decoding loads them without the trainer;
// their names are repeated here for the training code.
//
// Written with io::save_safetensors (temporary file, fsync, rename): a crash leaves the
// previous file whole. Nothing non-finite is ever written: saving checks first and throws.
// Loading validates as a model file does (qkv/models/model_file.h: IoError, ConfigError,
// ValueError naming the file and the tensor or key), and also ValueError for a non-finite
// optimizer moment or a negative second moment.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qkv/data/batcher.h"
#include "qkv/models/model_file.h"
#include "qkv/models/seq2seq.h"
#include "qkv/train/optimizer.h"

namespace qkv::train {

using models::kBestModelFile;
using models::kModelFile;
using models::kVocabFile;
inline constexpr const char* kTrainStateFile = "train_state.safetensors";
// One row per validation (tab-separated, with a header): the validation, the update, the
// training time excluding validation, the cross-entropy and BLEU; what a time-to-quality
// curve is drawn from. A resumed run drops the rows after its checkpoint, then appends.
inline constexpr const char* kValidationLogFile = "validations.tsv";

using models::load_model;
using models::load_parameters;
using models::LoadedModel;
using models::ModelFileInfo;
using models::qkv_version;
using models::read_model_info;
using models::save_model;

// Training progress besides the parameters and the optimizer: everything a run needs to
// continue bit-exactly, and its counters.
struct TrainProgress {
  int64_t update = 0;  // updates processed (applied or skipped as non-finite)
  int64_t micro_batches =
      0;  // micro-batches of those updates (== update without --accumulate or ranks)
  int64_t tokens_seen = 0;  // source + target tokens of those batches
  double wall_seconds = 0;  // training time used, summed over every session
  // The part of wall_seconds spent validating (files before this counter: 0).
  double valid_seconds = 0;
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
