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
#include <memory>
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
  // Data-parallel training (issue 17): called once every option is checked, it returns the
  // exchange this process trains through, or nullptr to train alone (Python, and `qkv
  // train` outside mpirun). With more than one rank, only rank 0 writes train.yml and
  // logs; --vocab (or --resume) is required so every rank reads the same vocabulary; the
  // ranks compare a fingerprint of all flags but --threads at start-up.
  std::function<std::shared_ptr<train::GradientExchange>()> make_exchange;
};

// ConfigError for options that do not fit together (naming the flag: an existing run
// without --resume, a directory holding a model but no training state, model flags that
// differ from the resumed model), and whatever reading the data, the vocabulary and the
// trainer throw, their field errors naming flags (cli::naming_flags: "--label-smoothing
// 1 must be in [0, 1)").
train::TrainSummary run_training_session(const cli::ParsedOptions& p, const TrainingHooks& hooks);

}  // namespace qkv::experiment
