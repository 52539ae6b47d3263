// One training session from `qkv train`'s options (train_flags.h): check every option,
// prepare the model directory, take or train the vocabulary, read the corpora, build or
// resume the Trainer, record the options in DIR/train.yml and train. The CLI's
// `qkv train` and Python's qkv.train run this, so both accept the same options with the
// same messages and write the same directory.
//
//   const cli::ParsedOptions p = experiment::train_options().parse(args);
//   const train::TrainSummary s = experiment::run_training_session(p, {.log = &std::cerr});
#pragma once

#include <atomic>
#include <functional>
#include <ostream>

#include "qkv/cli/options.h"
#include "qkv/train/trainer.h"

namespace qkv::experiment {

struct TrainingHooks {
  // Where the progress and data lines go (the CLI: stderr); nullptr: silent.
  std::ostream* log = nullptr;
  // Set and true: stop after the current update and save (Ctrl-C). Read by the trainer.
  const std::atomic<bool>* stop_requested = nullptr;
  // After every batch (progress bars, Python's callback and its Ctrl-C check).
  std::function<void(const train::UpdateRecord&)> on_update;
  // Just before and just after the training loop, once the data is read: the CLI routes
  // SIGINT to stop_requested only there, so that Ctrl-C during a long vocabulary or corpus
  // read still ends the process at once.
  std::function<void()> before_loop, after_loop;
};

// ConfigError for options that do not fit together (naming the flag: an existing run
// without --resume, a directory holding a model but no training state, model flags that
// differ from the resumed model), and whatever reading the data, the vocabulary and the
// trainer throw.
train::TrainSummary run_training_session(const cli::ParsedOptions& p, const TrainingHooks& hooks);

}  // namespace qkv::experiment
