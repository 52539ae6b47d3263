// The training loop (Marian's scheduler, in one class):
//
//   batch = BatchIterator.next()                       length-bucketed, seeded, resumable
//   logits = model.forward_train(src, tgt_in)          [B, Tt, V] on the tape
//   loss = cross_entropy(logits, tgt_out, ε, ignore = pad)   mean per target token
//   backward(loss)                                     into the flat gradient arena
//   NonFiniteGuard: NaN/Inf loss or gradient -> skip the update and count it; K in a row
//                   -> DivergenceError saying what to try
//   clip_by_global_norm -> Adam step with the schedule's lr -> zero_grad
//
// With --accumulate N or several ranks (options.exchange), an update is ranks × N such
// micro-batches whose gradients are summed, in micro-batch order, before one step
// (gradient_exchange.h defines the sum); one rank with N = 1 is the loop above, bitwise.
//
// and around it: validation every valid_freq updates (cross-entropy per target token;
// early stopping after N validations without a lower cross-entropy; then the observers
// the caller installed, Marian's validators: BLEU of greedy translations, the best model
// kept as model.best.safetensors, in experiment/validators.h; one row per validation in
// validations.tsv, checkpoint.h), a checkpoint every
// save_freq updates and at the end, a progress line every disp_freq updates, and the
// budget (updates, epochs, wall time; whichever comes first).
//
// Resuming (Trainer::resume) restores parameters, Adam's moments and step, the data
// position, the model seed, the dropout counters and every counter, so a run stopped and
// resumed gives bitwise the losses and parameters of an uninterrupted one (the thread
// count may even differ: every kernel is thread-count independent). The dropout counters
// travel only once models::Seq2Seq exposes them (detail/dropout_state.h); until then the
// bit-exact guarantee holds for dropout 0.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "qkv/data/batcher.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/data/vocab.h"
#include "qkv/models/seq2seq.h"
#include "qkv/train/checkpoint.h"
#include "qkv/train/clip.h"
#include "qkv/train/gradient_exchange.h"
#include "qkv/train/optimizer.h"
#include "qkv/train/schedule.h"

namespace qkv::train {

// Validation data: pairs as ids, and the target text of each pair for BLEU.
struct ValidationSet {
  std::shared_ptr<const data::TokenizedCorpus> corpus;
  std::vector<std::string> references;  // [N] target line of corpus pair i
};

// Tokenizes `corpus` with `vocab` and keeps the reference text of each kept pair.
// ConfigError when no pair is left.
ValidationSet make_validation_set(const data::ParallelCorpus& corpus, const data::Vocab& vocab);

struct TrainingData {
  data::Vocab vocab;
  std::shared_ptr<const data::TokenizedCorpus> train;
  std::optional<ValidationSet> valid;  // none: no validation
};

// When to stop (--after): the first limit reached; none set means no limit.
struct StopAfter {
  std::optional<int64_t> updates;  // batches processed, skipped ones included
  std::optional<int64_t> epochs;   // full passes over the training data
  std::optional<double> seconds;   // training wall time, summed over resumed sessions
};

// One update (all its micro-batches), for observers (tests, logs).
struct UpdateRecord {
  int64_t update = 0;    // 1-based
  uint64_t epoch = 0;    // 0-based epoch its first micro-batch came from
  double loss = 0;       // mean label-smoothed cross-entropy per target token of the update
  bool applied = true;   // false: skipped as non-finite
  double grad_norm = 0;  // before clipping
  double learning_rate = 0;
  int64_t src_tokens = 0, tgt_tokens = 0;
};

struct TrainerOptions;

// What one validation found: the trainer's cross-entropy and whether it is a new best,
// and what the observers (ValidationObserver) measured or did.
struct ValidationResult {
  double loss = 0;  // cross-entropy per target token (no label smoothing)
  int64_t tgt_tokens = 0;
  bool improved = false;  // a new lowest loss (resets early stopping's count)
  // Set by observers: the corpus BLEU of greedy translations (experiment::bleu_validator),
  // a file saved for this validation, named in the log line (experiment::best_model_saver:
  // model.best.safetensors).
  std::optional<double> bleu;
  std::string saved;
};

// What an observer of a validation sees: the model in evaluation mode with gradients
// off, the validation pairs (the trainer's batches in corpus order; references[i] is the
// target text of the pair a batch row's index i names), the vocabulary, the options.
struct ValidationContext {
  models::Seq2Seq& model;
  const data::Vocab& vocab;
  std::span<const data::Batch> batches;
  std::span<const std::string> references;
  const TrainerOptions& options;
  int64_t update = 0;
};

// Called after each validation's cross-entropy, in the order installed, before the
// trainer records the result (best loss, the best BLEU, early stopping) and logs its
// line; may measure the model into `result` or act on it. Rank 0 only.
using ValidationObserver = std::function<void(const ValidationContext&, ValidationResult&)>;

struct TrainerOptions {
  std::filesystem::path model_dir;  // --model
  // --mini-batch-words, --max-length; the special ids are taken from the vocabulary.
  data::BatchOptions batch;
  uint64_t seed = 1111;  // --seed: initial values, dropout masks, batch order
  AdamOptions adam;
  ScheduleOptions schedule;  // --learn-rate, --lr-schedule, --warmup
  double clip_norm = 1.0;    // --clip-norm; 0: no clipping
  // --accumulate N: micro-batches (of --mini-batch-words each) per update and rank, their
  // gradients summed before one optimizer step (Marian's --optimizer-delay). An update's
  // gradient is that of the mean loss per target token over all its micro-batches
  // (gradient_exchange.h defines the sum). N = 1 with one rank is the classic trainer,
  // bitwise. With N·ranks > 1 the dropout masks of micro-batch k (counted over the run)
  // start at counter k·2^36 in every layer, so no rank needs another's micro-batches.
  int64_t accumulate = 1;
  // The other ranks of a data-parallel run; nullptr: this process alone (LocalExchange).
  // Every rank reads the same batch stream and computes its share of each update; only
  // rank 0 writes files, validates and logs.
  std::shared_ptr<GradientExchange> exchange;
  // Whether the exchange starts during the backward pass of this rank's last micro-batch,
  // each region of the gradient as soon as it is complete (GradientExchange::
  // start_reduce), instead of after it. The parameters are bitwise the same either way.
  bool overlap_exchange = true;
  // Checked equal on every rank at start-up besides what the trainer checks itself (the
  // corpora, the vocabulary, the model, the checkpoint): e.g. the front end's flags.
  std::vector<FingerprintItem> fingerprint;
  double label_smoothing = 0.1;  // --label-smoothing, in [0, 1)
  int max_non_finite = 5;        // non-finite updates in a row before giving up
  int64_t valid_freq = 0;        // --valid-freq in updates; 0: never
  int64_t save_freq = 0;         // --save-freq in updates; 0: only at the end
  int64_t disp_freq = 0;         // --disp-freq in updates; 0: no progress lines by count
  // --disp-seconds: also a progress line once this many seconds passed since the last one
  // (a slow model still shows it is alive); 0: by count only. With either set, the first
  // update of a session always prints one.
  double disp_seconds = 0;
  int64_t early_stopping = 0;  // --early-stopping N validations; 0: off
  // Run at every validation besides the cross-entropy (none: the loss alone, no
  // model.best.safetensors); experiment::standard_validators() is what the front ends
  // install.
  std::vector<ValidationObserver> validation_observers;
  StopAfter after;  // --after
  // Progress and validation lines (the CLI passes std::cerr); nullptr: silent.
  std::ostream* log = nullptr;
  // When set and true, training stops after the current update and saves (the CLI sets
  // it from SIGINT/SIGTERM, so Ctrl-C never loses the work since the last checkpoint).
  const std::atomic<bool>* stop_requested = nullptr;

  // Called after every batch.
  std::function<void(const UpdateRecord&)> on_update;
  // Test hook: when it returns true for an update, its gradients are made NaN after
  // backward (exercises the non-finite guard without a diverging model).
  std::function<bool(int64_t update)> poison_gradients;
};

// FieldError (a ConfigError) naming the first field of `options` out of range; the
// Trainer checks its options with it, a front end may call it before any work.
void check_options(const TrainerOptions& options);

enum class StopReason { Updates, Epochs, WallTime, EarlyStopping, Interrupted };

struct TrainSummary {
  StopReason reason = StopReason::Updates;
  TrainProgress progress;
  std::optional<ValidationResult> last_validation;
};
std::string_view to_string(StopReason reason) noexcept;

class Trainer {
 public:
  // A new run: a model of `config` initialised from options.seed. Creates
  // options.model_dir and writes vocab.spm into it, unless it holds this vocabulary
  // already (a front end trained it there): the file is written once. ConfigError when
  // config.vocab_size or its special ids differ from the vocabulary's; FieldError naming
  // the option out of range; FieldResourceError naming the fields to reduce when the model
  // and the largest batch would not fit in memory (memory.h), checked before the model
  // is built.
  Trainer(const models::ModelConfig& config, TrainingData data, TrainerOptions options);

  // Continues the run whose train_state.safetensors is in options.model_dir. `data` must
  // be the same training data (ConfigError otherwise: the batch position's fingerprint
  // differs) and data.vocab the one in the directory (ConfigError otherwise). The memory
  // check of the constructor applies too (the state file bounds the model's own size).
  static Trainer resume(TrainingData data, TrainerOptions options);

  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  ~Trainer();

  // Trains until the budget is reached or early stopping triggers; saves the checkpoint
  // at the end. DivergenceError when the guard gives up (the last checkpoint stays).
  TrainSummary run();

  // Cross-entropy on the validation set, then the observers; the model is left in
  // training mode. FieldError naming {valid_sets} when there is no validation set.
  ValidationResult validate();
  // model.safetensors and train_state.safetensors in model_dir.
  void save_checkpoint();

  models::Seq2Seq& model() noexcept;
  const Adam& optimizer() const noexcept;
  const TrainProgress& progress() const noexcept;
  // The batch iterator's reading and length statistics (counted skips).
  const data::CorpusStats& corpus_stats() const noexcept;
  int64_t batches_per_epoch() const noexcept;

 private:
  struct State;
  explicit Trainer(std::unique_ptr<State> state);
  // One update: this rank's micro-batches of `batches` (forward, loss, backward), the
  // exchange, guard, clip, Adam step.
  UpdateRecord train_on(const std::vector<data::Batch>& batches);
  // Forward and backward of micro-batch `global_index` of the run into the gradient
  // arena (NaN when its loss is not finite); returns its loss.
  // on_ready: passed to autograd::backward (the overlapped exchange's hook).
  double micro_batch(const data::Batch& b, int64_t global_index, bool set_dropout,
                     const autograd::GradReadyFn& on_ready = {});
  // Refuses ranks that would train different runs (start-up; data-parallel only).
  void check_ranks_agree();
  // Whether update `update` gets a progress line (by count, by time, or the first of a run).
  bool progress_due(int64_t update, bool first_of_session) const;
  void log_progress(const UpdateRecord& last);

  std::unique_ptr<State> s_;
};

}  // namespace qkv::train
