// The validators every front end trains with (Marian's validators: observers of the
// trainer's validation, train::ValidationObserver). The trainer computes the validation
// cross-entropy, the best loss and early stopping; what else a validation does is wired
// in by its caller:
//   bleu_validator     corpus BLEU of greedy translations of the validation set
//   best_model_saver   model.best.safetensors whenever the cross-entropy improves
// experiment::trainer_options installs standard_validators(), so `qkv train`, qkv.train
// and `qkv compare` write the same files and log the same lines.
#pragma once

#include <vector>

#include "qkv/train/trainer.h"

namespace qkv::experiment {

// Translates the validation set greedily, in the trainer's validation batches, and puts
// the corpus BLEU against the references into the result. The output length per batch is
// at most length_factor * Ts + 10 tokens, and batch.max_length + 10 (a Transformer's
// max_positions too). FieldError naming {valid_length_factor} unless it is > 0.
train::ValidationObserver bleu_validator(double valid_length_factor = 2.0);

// Saves the model as model.best.safetensors in the model directory (with its vocabulary
// stamp) when the validation improved the best cross-entropy, and names the file in the
// result (the trainer's log line says "saved model.best.safetensors").
train::ValidationObserver best_model_saver();

// BLEU, then the best model (so that the BLEU of the best model is recorded with it).
std::vector<train::ValidationObserver> standard_validators();

}  // namespace qkv::experiment
