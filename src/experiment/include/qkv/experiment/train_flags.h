// The flags of `qkv train` (Marian's names), and what they turn into: ModelSettings and
// TrainSettings (settings.h), whose defaults they show, and from those a ModelConfig and
// TrainerOptions. Library code, so that every front end trains from the same options: the
// CLI's `qkv train` and `qkv compare`, and `qkv.train` in Python (whose keyword arguments
// are these flags in snake_case). Errors name the flag.
#pragma once

#include "qkv/cli/options.h"
#include "qkv/data/vocab.h"
#include "qkv/experiment/settings.h"
#include "qkv/models/config.h"
#include "qkv/train/trainer.h"

namespace qkv::experiment {

cli::OptionSet train_options();

// Whether the train options declared into a set require --model (`qkv train`) or refuse it
// (`qkv compare`, which gives every variant a directory of its own).
enum class ModelDirFlag { Required, Optional };

// Declares `qkv train`'s flags into `o`, for a command that takes them beside its own.
void declare_train_options(cli::OptionSet& o, ModelDirFlag model_dir = ModelDirFlag::Required);

// The typed settings the flags give.
ModelSettings model_settings_from(const cli::ParsedOptions& p);
TrainSettings train_settings_from(const cli::ParsedOptions& p);

// The two files of a list flag (--train-sets SRC TGT); ConfigError naming `flag` for
// another count.
CorpusFiles corpus_files_from(const cli::ParsedOptions& p, const char* flag);

// The model the flags describe, for `vocab` (its size and special ids). ConfigError naming
// the flag for combinations the models do not support; ResourceError naming the size
// flags when its parameters, gradients and Adam moments could not fit in memory.
models::ModelConfig model_config_from(const cli::ParsedOptions& p, const data::Vocab& vocab);
// The same for a vocabulary of `vocab_size` with qkv's fixed special ids (pad 0, bos 2,
// eos 3): checks the model flags before any expensive work.
models::ModelConfig model_config_from(const cli::ParsedOptions& p, int64_t vocab_size);

// True when a flag that shapes the model (--type, --dim-emb, ...) was given explicitly.
bool model_flags_given(const cli::ParsedOptions& p);

// Everything but the data: optimizer, schedule, budget, frequencies, batch sizes.
train::TrainerOptions trainer_options_from(const cli::ParsedOptions& p);

}  // namespace qkv::experiment
