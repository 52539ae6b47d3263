// The Trainer's state, shared by trainer.cpp (the loop, checkpoints) and validation.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "qkv/data/batcher.h"
#include "qkv/train/clip.h"
#include "qkv/train/trainer.h"

namespace qkv::train {

using Clock = std::chrono::steady_clock;

// Sums over the updates since the last progress line.
struct DisplayWindow {
  int64_t updates = 0;
  int64_t src_tokens = 0, tgt_tokens = 0;
  int64_t loss_tokens = 0;  // target tokens of the updates with a finite loss
  double loss_sum = 0;      // Σ loss · target tokens over those updates
  Clock::time_point start;
};

struct Trainer::State {
  State(TrainingData d, TrainerOptions o, std::unique_ptr<models::Seq2Seq> m, Adam a)
      : data(std::move(d)),
        options(std::move(o)),
        model(std::move(m)),
        adam(std::move(a)),
        guard(options.max_non_finite),
        exchange(options.exchange ? options.exchange : std::make_shared<LocalExchange>()),
        session_start(Clock::now()) {}

  TrainingData data;
  TrainerOptions options;
  std::unique_ptr<models::Seq2Seq> model;
  Adam adam;
  NonFiniteGuard guard;
  std::optional<data::BatchIterator> batches;
  TrainProgress progress;
  std::shared_ptr<GradientExchange> exchange;
  // An update's gradient sum, and this rank's micro-batch gradients where the exchange
  // needs them one by one (not summed as they come): used when an update has more than
  // one micro-batch.
  std::vector<float> sum;
  std::vector<std::vector<float>> own_grads;
  // Time in the exchange this session (data-parallel), and how many updates used it.
  double exchange_seconds = 0;
  int64_t exchanges = 0;

  // Files, validation and log lines are rank 0's.
  bool rank0() const { return exchange->rank() == 0; }
  // Micro-batches per update over all ranks.
  int64_t micro_batches_per_update() const { return options.accumulate * exchange->size(); }
  // Validation batches, in corpus order (computed once).
  std::vector<data::Batch> valid_batches;
  std::vector<std::string> valid_references;  // of the pairs in valid_batches
  // Whether validations.tsv has been cut back to this run's checkpoint (done before this
  // process appends its first row).
  bool valid_log_ready = false;

  // Training time: what earlier sessions used plus the time since this one began (reset
  // by run(), so time between runs does not count).
  Clock::time_point session_start;
  double wall_at_session_start = 0;
  DisplayWindow window;

  double wall_seconds() const {
    return wall_at_session_start +
           std::chrono::duration<double>(Clock::now() - session_start).count();
  }
  void prepare_validation();
  void log_validation_row(const ValidationResult& result);
};

}  // namespace qkv::train
