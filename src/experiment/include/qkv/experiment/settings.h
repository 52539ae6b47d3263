// What `qkv train`'s flags say, typed: the model (ModelSettings) and the training
// (TrainSettings), each field named after its flag (dim_emb is --dim-emb) and defaulted
// here, once: the flags take their defaults from these structs (train_flags.cpp), and a
// caller that builds them in C++ (`qkv demo`, Python, a test) gets the same values.
//
// They hold what the user chooses; a vocabulary and a model directory turn them into
// what the library runs (models::ModelConfig, train::TrainerOptions). Errors name the
// field as {field} (qkv/base/field_error.h), for each front end to name in its terms.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "qkv/data/vocab.h"
#include "qkv/models/config.h"
#include "qkv/train/schedule.h"
#include "qkv/train/trainer.h"

namespace qkv::experiment {

// A source file and its target (or reference) file, aligned line by line.
struct CorpusFiles {
  std::filesystem::path source, target;
  friend bool operator==(const CorpusFiles&, const CorpusFiles&) = default;
};

struct ModelSettings {
  models::ModelType type = models::ModelType::Transformer;
  // Unset: additive for an rnn; a Transformer always uses scaled-dot.
  std::optional<models::AttentionKind> attention;
  models::CellType cell = models::CellType::Gru;
  bool input_feeding = false;  // rnn with Luong attention only
  int64_t dim_emb = 256;
  int64_t dim_rnn = 256;
  std::optional<int64_t> enc_depth, dec_depth;  // unset: 3 for a Transformer, 1 for an rnn
  int64_t heads = 4;                            // divides dim_emb
  int64_t dim_ffn = 1024;
  double dropout = 0.1;
  friend bool operator==(const ModelSettings&, const ModelSettings&) = default;
};

// The default of TrainSettings::disp_seconds where stderr is a terminal.
inline constexpr double kDefaultDispSeconds = 10;

struct TrainSettings {
  // The data.
  int64_t vocab_size = 8000;  // pieces of a vocabulary trained on the corpora
  bool skip_invalid = false;  // skip (and count) pairs with invalid UTF-8
  int64_t max_length = 100;   // longer training pairs (in tokens) are skipped
  int64_t mini_batch_words = 4096;
  // The optimisation.
  double label_smoothing = 0.1;
  double learn_rate = 1e-3;
  train::LrSchedule lr_schedule = train::LrSchedule::InvSqrt;
  int64_t warmup = 500;
  double clip_norm = 1.0;
  std::string after = "20e";  // the budget, as cli::parse_budget reads it: 1000u, 5e, 30m
  int64_t valid_freq = 500, save_freq = 500, disp_freq = 100;
  // Unset: kDefaultDispSeconds when stderr is a terminal, else 0 (logs by count only).
  std::optional<double> disp_seconds;
  int64_t early_stopping = 10;
  int64_t seed = 1111;
  int64_t threads = 0;  // 0: QKV_NUM_THREADS or all cores
  int64_t accumulate = 1;
  bool exchange_overlap = true;
  friend bool operator==(const TrainSettings&, const TrainSettings&) = default;
};

// The model `model` describes for a vocabulary of `vocab_size` pieces with qkv's special
// ids (pad 0, bos 2, eos 3), room for training pairs of `max_length` tokens. FieldError
// for combinations the models do not support (attention of a Transformer, input_feeding,
// heads not dividing dim_emb) and models::validate's errors; ResourceError when its
// parameters, gradients and Adam moments could not fit in memory.
models::ModelConfig model_config(const ModelSettings& model, int64_t vocab_size,
                                 int64_t max_length);
// The same with the special ids and the size of `vocab`.
models::ModelConfig model_config(const ModelSettings& model, const data::Vocab& vocab,
                                 int64_t max_length);

// Everything but the data, for a run in `model_dir`, with the standard validators
// installed (validators.h: BLEU, model.best.safetensors). FieldError for a budget that
// does not parse or a mini_batch_words below max_length + 1, and train::check_options'
// errors (every option is checked here, before any work).
train::TrainerOptions trainer_options(const TrainSettings& train,
                                      const std::filesystem::path& model_dir);

// "inv-sqrt" | "constant", as --lr-schedule spells them.
std::string_view to_string(train::LrSchedule schedule) noexcept;

}  // namespace qkv::experiment
