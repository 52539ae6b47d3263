// The flags of `qkv train` (Marian's names), and what they turn into: a ModelConfig and
// TrainerOptions. Library code, so that every front end trains from the same options: the
// CLI's `qkv train` and `qkv compare`, and `qkv.train` in Python (whose keyword arguments
// are these flags in snake_case).
#pragma once

#include "qkv/cli/options.h"
#include "qkv/data/vocab.h"
#include "qkv/models/config.h"
#include "qkv/train/trainer.h"

namespace qkv::experiment {

cli::OptionSet train_options();

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
