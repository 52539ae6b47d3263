// The training loop, construction and resumption, checkpoints and progress lines.
#include "qkv/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "detail/dropout_state.h"
#include "detail/trainer_state.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/format.h"
#include "qkv/base/hash.h"
#include "qkv/decode/vocab_stamp.h"
#include "qkv/io/atomic_file.h"
#include "qkv/train/memory.h"

namespace qkv::train {

// Errors name the fields (FieldError); the front ends name them in their terms.
void check_options(const TrainerOptions& o) {
  QKV_CHECK(!o.model_dir.empty(), FieldError, "{model_dir}: no model directory given");
  QKV_CHECK(std::isfinite(o.label_smoothing) && o.label_smoothing >= 0 && o.label_smoothing < 1,
            FieldError, "{label_smoothing} ", o.label_smoothing, " must be in [0, 1)");
  QKV_CHECK(std::isfinite(o.clip_norm) && o.clip_norm >= 0, FieldError, "{clip_norm} ", o.clip_norm,
            " must be >= 0 (0 turns clipping off)");
  for (const auto& [field, value] :
       {std::pair{"{valid_freq} ", o.valid_freq}, std::pair{"{save_freq} ", o.save_freq},
        std::pair{"{disp_freq} ", o.disp_freq}, std::pair{"{early_stopping} ", o.early_stopping}})
    QKV_CHECK(value >= 0, FieldError, field, value, " must be >= 0 (0 turns it off)");
  QKV_CHECK(std::isfinite(o.disp_seconds) && o.disp_seconds >= 0, FieldError, "{disp_seconds} ",
            o.disp_seconds, " must be >= 0 (0 turns it off)");
  QKV_CHECK(o.accumulate >= 1 && o.accumulate <= 4096, FieldError, "{accumulate} ", o.accumulate,
            " must be in [1, 4096]");
  validate(o.schedule);
}

namespace {

void check_vocab(const models::ModelConfig& c, const data::Vocab& v) {
  QKV_CHECK(c.vocab_size == v.size(), ConfigError, "the model has vocab_size ", c.vocab_size,
            " but the vocabulary has ", v.size(),
            " pieces; use the vocabulary the model was made for");
  QKV_CHECK(c.pad_id == v.pad_id() && c.bos_id == v.bos_id() && c.eos_id == v.eos_id(), ConfigError,
            "the model's special ids (pad ", c.pad_id, ", bos ", c.bos_id, ", eos ", c.eos_id,
            ") differ from the vocabulary's (", v.pad_id(), ", ", v.bos_id(), ", ", v.eos_id(),
            ")");
}

// ResourceError naming the flags to reduce when the model, the largest batch of
// `batches` (every epoch cuts the same shapes) and the buffers of an update's
// micro-batches would not fit in memory (memory.h).
void check_memory_for(const models::ModelConfig& config, const data::BatchIterator& batches,
                      const data::TokenizedCorpus& corpus, const TrainerOptions& options) {
  const GradientExchange* exchange = options.exchange.get();
  check_training_memory(config, largest_batch(config, corpus, batches.schedule(0), options.batch),
                        gradient_buffers_for(options.accumulate, exchange ? exchange->size() : 1,
                                             exchange == nullptr || exchange->sums_as_it_goes()));
}

// A run killed mid-save leaves "<file>.tmp.<pid>.<n>" behind, as large as the file; the
// next run in the directory removes those whose process is gone.
void remove_leftover_temporaries(const TrainerOptions& o) {
  int removed = 0;
  for (const char* file : {kModelFile, kBestModelFile, kTrainStateFile, kVocabFile})
    removed += io::remove_stale_temporaries(o.model_dir / file);
  if (removed > 0 && o.log != nullptr)
    *o.log << "removed " << removed << " temporary file(s) left in " << o.model_dir.string()
           << " by an interrupted save\n";
}

// vocab.spm in the model directory, unless the directory already holds exactly this
// vocabulary (a front end trained it there): written once either way.
void write_vocab(const std::filesystem::path& dir, const data::Vocab& vocab) {
  const std::filesystem::path file = dir / kVocabFile;
  const std::string bytes = vocab.serialized();
  std::error_code ec;
  if (std::filesystem::file_size(file, ec) == bytes.size() && !ec) {
    const std::vector<std::byte> there = io::read_file(file, bytes.size());
    const std::span<const std::byte> want = std::as_bytes(std::span(bytes));
    if (std::equal(there.begin(), there.end(), want.begin(), want.end())) return;
  }
  io::write_file_atomically(file, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

// Takes the special ids from the vocabulary (the batcher and the model must agree).
TrainerOptions with_vocab_ids(TrainerOptions o, const data::Vocab& v) {
  o.batch.pad_id = v.pad_id();
  o.batch.bos_id = v.bos_id();
  o.batch.eos_id = v.eos_id();
  return o;
}

// "1h02m03s", "4m05s", "6s".
std::string format_duration(double seconds) {
  const auto total = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  char buf[48];
  if (h > 0)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", (long long)h, (long long)m, (long long)s);
  else if (m > 0)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)m, (long long)s);
  else
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  return buf;
}

}  // namespace

std::string_view to_string(StopReason reason) noexcept {
  switch (reason) {
    case StopReason::Updates:
      return "update limit reached";
    case StopReason::Epochs:
      return "epoch limit reached";
    case StopReason::WallTime:
      return "time limit reached";
    case StopReason::EarlyStopping:
      return "early stopping: no better validation cross-entropy";
    case StopReason::Interrupted:
      return "interrupted";
  }
  return "?";
}

Trainer::Trainer(std::unique_ptr<State> state) : s_(std::move(state)) {}
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;
Trainer::~Trainer() = default;

Trainer::Trainer(const models::ModelConfig& config, TrainingData data, TrainerOptions options) {
  check_options(options);
  QKV_CHECK(data.train != nullptr, ValueError, "Trainer: no training data");
  check_vocab(config, data.vocab);
  options = with_vocab_ids(std::move(options), data.vocab);
  // The batches first: with the model they decide the memory training needs, checked
  // before anything large is allocated.
  data::BatchIterator batches(data.train, options.batch, options.seed);
  check_memory_for(config, batches, *data.train, options);
  std::unique_ptr<models::Seq2Seq> model = models::make_model(config, options.seed);
  Adam adam(model->parameters().numel(), options.adam);
  s_ = std::make_unique<State>(std::move(data), std::move(options), std::move(model),
                               std::move(adam));
  State& s = *s_;
  s.batches.emplace(std::move(batches));
  s.progress.model_seed = s.options.seed;
  s.progress.position = s.batches->position();
  s.progress.dropout_offsets = detail::dropout_offsets(*s.model);

  std::error_code ec;
  std::filesystem::create_directories(s.options.model_dir, ec);
  QKV_CHECK(!ec && std::filesystem::is_directory(s.options.model_dir), IoError,
            "cannot create the model directory ", s.options.model_dir.string(), ": ",
            ec ? ec.message() : "not a directory");
  if (s.rank0()) {
    remove_leftover_temporaries(s.options);
    write_vocab(s.options.model_dir, s.data.vocab);
  }
  s.prepare_validation();
  check_ranks_agree();
}

Trainer Trainer::resume(TrainingData data, TrainerOptions options) {
  check_options(options);
  QKV_CHECK(data.train != nullptr, ValueError, "Trainer: no training data");
  const std::filesystem::path path = options.model_dir / kTrainStateFile;
  QKV_CHECK(std::filesystem::exists(path), IoError, "cannot resume: ", path.string(),
            " does not exist (no checkpoint was saved in ", options.model_dir.string(), ")");
  // Rank 0 alone: another rank's "process gone" test would look at another machine's pids.
  if (!options.exchange || options.exchange->rank() == 0) remove_leftover_temporaries(options);
  RestoredTraining restored = load_train_state(path, options.adam);
  check_vocab(restored.model->config(), data.vocab);
  options = with_vocab_ids(std::move(options), data.vocab);
  auto state = std::make_unique<State>(std::move(data), std::move(options),
                                       std::move(restored.model), std::move(restored.adam));
  State& s = *state;
  s.progress = restored.progress;
  s.wall_at_session_start = s.progress.wall_seconds;
  detail::restore_dropout_offsets(*s.model, s.progress.dropout_offsets, path.string());
  s.batches.emplace(s.data.train, s.options.batch, s.progress.position);
  check_memory_for(s.model->config(), *s.batches, *s.data.train, s.options);
  try {
    s.guard.restore(s.progress.guard_consecutive, s.progress.guard_total);
  } catch (const ValueError& e) {
    QKV_THROW(ConfigError, path.string(), ": ", e.what());
  }
  s.prepare_validation();
  Trainer trainer(std::move(state));
  trainer.check_ranks_agree();
  return trainer;
}

void Trainer::check_ranks_agree() {
  State& s = *s_;
  if (s.exchange->size() <= 1) return;
  const auto hash_of = [](const auto& values) {
    return fnv1a_64(
        {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0])});
  };
  const data::BatchPosition at = s.batches->position();
  std::ostringstream training;  // what the trainer's options change in the updates
  training.precision(17);
  training << s.options.accumulate << ' ' << s.options.label_smoothing << ' ' << s.options.clip_norm
           << ' ' << s.options.adam.beta1 << ' ' << s.options.adam.beta2 << ' '
           << s.options.adam.eps << ' ' << s.options.adam.weight_decay << ' '
           << int(s.options.schedule.kind) << ' ' << s.options.schedule.learning_rate << ' '
           << s.options.schedule.warmup << ' ' << s.options.max_non_finite << ' '
           << int(s.options.adam.variant) << ' ' << int(s.exchange->mode());
  uint64_t valid = 0;
  if (s.data.valid)
    for (const std::string& ref : s.valid_references) valid = valid * 31 + fnv1a_64(ref);
  const std::span<const float> params(s.model->parameters().values().data<float>(),
                                      size_t(s.model->parameters().numel()));
  const std::vector<uint64_t> position = {at.seed, at.epoch, at.index, uint64_t(s.progress.update)};
  std::vector<FingerprintItem> items = {
      {"the vocabulary", fnv1a_64(s.data.vocab.serialized())},
      {"the training corpus (its kept pairs, {max_length}, {mini_batch_words})", at.fingerprint},
      {"the data position ({seed}, epoch, batch, update)", hash_of(position)},
      {"the model configuration", fnv1a_64(models::to_json(s.model->config()))},
      {"the training options ({accumulate}, optimizer, schedule, clipping, label smoothing)",
       fnv1a_64(training.str())},
      {"the validation set", valid},
      {"the parameters (initial, or the checkpoint resumed)", hash_of(params)}};
  items.insert(items.end(), s.options.fingerprint.begin(), s.options.fingerprint.end());
  check_same_run(*s.exchange, items);
}

models::Seq2Seq& Trainer::model() noexcept {
  return *s_->model;
}
const Adam& Trainer::optimizer() const noexcept {
  return s_->adam;
}
const TrainProgress& Trainer::progress() const noexcept {
  return s_->progress;
}
const data::CorpusStats& Trainer::corpus_stats() const noexcept {
  return s_->batches->stats();
}
int64_t Trainer::batches_per_epoch() const noexcept {
  return s_->batches->batches_per_epoch();
}

void Trainer::save_checkpoint() {
  State& s = *s_;
  if (!s.rank0()) return;  // the ranks hold the same state: one writer
  s.progress.position = s.batches->position();
  s.progress.guard_consecutive = s.guard.consecutive_skips();
  s.progress.guard_total = s.guard.total_skips();
  s.progress.dropout_offsets = detail::dropout_offsets(*s.model);
  s.progress.wall_seconds = s.wall_seconds();
  // The train state first: it alone is what --resume reads, and it is complete on its own.
  // A failed write (a full disk) leaves every file whole, each either the previous save's
  // or this one's, and train_state.safetensors never older than model.safetensors; the
  // error says so and what to do, since the run itself cannot continue.
  try {
    save_train_state(s.options.model_dir / kTrainStateFile, s.progress, *s.model, s.adam);
    save_model(*s.model, s.options.model_dir / kModelFile, kVocabFile, s.progress.update,
               decode::vocab_stamp(s.data.vocab));
  } catch (const IoError& e) {
    throw FieldIoError(std::string(e.what()) + "; the last checkpoint in " +
                           s.options.model_dir.string() +
                           " is intact: free disk space (or fix the cause above), then rerun "
                           "with {resume} to continue from it",
                       e.where());
  }
}

TrainSummary Trainer::run() {
  State& s = *s_;
  s.session_start = Clock::now();
  s.wall_at_session_start = s.progress.wall_seconds;
  s.window = {.start = s.session_start};
  s.model->set_training(true);
  const StopAfter& after = s.options.after;
  TrainSummary summary;
  const int64_t first_update = s.progress.update + 1;
  uint64_t last_epoch = s.batches->epoch();
  const bool several = s.exchange->size() > 1;
  while (true) {
    if (after.updates && s.progress.update >= *after.updates) {
      summary.reason = StopReason::Updates;
      break;
    }
    if (after.epochs && int64_t(s.batches->epoch()) >= *after.epochs) {
      summary.reason = StopReason::Epochs;
      break;
    }
    // Rank 0's clock and any rank's stop request decide for all: every rank stops at the
    // same update (one small collective per update when there are several).
    int64_t stop = 0;  // 1: time is up (checked first, as in one process); 2: stop asked
    if (after.seconds && s.rank0() && s.wall_seconds() >= *after.seconds)
      stop = 1;
    else if (s.options.stop_requested != nullptr && s.options.stop_requested->load())
      stop = 2;
    if (several) stop = s.exchange->max_over_ranks(stop);
    if (stop != 0) {
      summary.reason = stop == 2 ? StopReason::Interrupted : StopReason::WallTime;
      break;
    }
    const uint64_t epoch = s.batches->epoch();
    std::vector<data::Batch> batches;
    for (int64_t j = 0; j < s.micro_batches_per_update(); ++j) batches.push_back(s.batches->next());
    UpdateRecord record = train_on(batches);
    record.epoch = epoch;
    if (s.options.on_update) s.options.on_update(record);
    const int64_t u = s.progress.update;
    last_epoch = epoch;
    if (progress_due(u, u == first_update)) log_progress(record);
    if (s.options.valid_freq > 0 && u % s.options.valid_freq == 0 && s.data.valid) {
      bool stop_early = false;
      if (s.rank0()) {
        summary.last_validation = validate();
        stop_early = s.options.early_stopping > 0 &&
                     s.progress.stalled_validations >= s.options.early_stopping;
      }
      if (several) stop_early = s.exchange->max_over_ranks(stop_early ? 1 : 0) != 0;
      if (stop_early) {
        summary.reason = StopReason::EarlyStopping;
        break;
      }
    }
    if (s.options.save_freq > 0 && u % s.options.save_freq == 0) save_checkpoint();
  }
  save_checkpoint();
  if (s.options.log != nullptr && s.exchange->size() > 1 && s.exchanges > 0)
    *s.options.log << "gradient exchange: " << s.exchange->size() << " ranks, "
                   << format_fixed(double(s.model->parameters().numel()) * 4 / 1e6, 1)
                   << " MB per update, "
                   << format_fixed(1e3 * s.exchange_seconds / double(s.exchanges), 1)
                   << " ms per update on rank 0"
                   << (s.options.overlap_exchange ? " after the backward pass (overlapped)" : "")
                   << " (waiting for slower ranks included), "
                   << format_fixed(100 * s.exchange_seconds /
                                       std::max(1e-9, s.wall_seconds() - s.wall_at_session_start),
                                   1)
                   << "% of this session\n";
  if (s.options.log != nullptr)
    *s.options.log << "training stopped after update " << s.progress.update << " (ep "
                   << last_epoch + 1 << "): " << to_string(summary.reason) << "; saved "
                   << (s.options.model_dir / kModelFile).string() << "\n";
  summary.progress = s.progress;
  return summary;
}

bool Trainer::progress_due(int64_t update, bool first_of_session) const {
  const TrainerOptions& o = s_->options;
  if (o.disp_freq == 0 && o.disp_seconds == 0) return false;
  if (first_of_session) return true;
  if (o.disp_freq > 0 && update % o.disp_freq == 0) return true;
  const double since = std::chrono::duration<double>(Clock::now() - s_->window.start).count();
  return o.disp_seconds > 0 && since >= o.disp_seconds;
}

void Trainer::log_progress(const UpdateRecord& last) {
  State& s = *s_;
  DisplayWindow& w = s.window;
  if (s.options.log == nullptr || w.updates == 0) return;
  const Clock::time_point now = Clock::now();
  const double seconds = std::max(1e-9, std::chrono::duration<double>(now - w.start).count());
  std::ostream& out = *s.options.log;
  out << "ep " << last.epoch + 1 << " up " << s.progress.update << ": loss ";
  if (w.loss_tokens > 0)
    out << format_fixed(w.loss_sum / double(w.loss_tokens), 4) << " per target token";
  else
    out << "n/a (every update skipped)";
  out << ", " << format_fixed(double(w.src_tokens + w.tgt_tokens) / seconds, 0) << " tokens/s, lr "
      << learning_rate_at(s.options.schedule, std::max<int64_t>(1, s.adam.step_count())) << ", "
      << format_duration(s.wall_seconds());
  // ETA from the budget and this window's pace, when the budget says where the end is.
  const double per_update = seconds / double(w.updates);
  const StopAfter& after = s.options.after;
  double eta = std::numeric_limits<double>::infinity();
  if (after.updates) eta = std::min(eta, double(*after.updates - s.progress.update) * per_update);
  if (after.epochs) {
    const int64_t left = (*after.epochs - int64_t(s.batches->epoch())) * batches_per_epoch() -
                         int64_t(s.batches->position().index);
    eta = std::min(eta, double(std::max<int64_t>(left, 0)) * per_update);
  }
  if (after.seconds) eta = std::min(eta, *after.seconds - s.wall_seconds());
  if (std::isfinite(eta)) out << ", ETA " << format_duration(eta);
  out << "\n";
  w = {.start = now};
}

double Trainer::micro_batch(const data::Batch& b, int64_t global_index, bool set_dropout,
                            const autograd::GradReadyFn& on_ready) {
  State& s = *s_;
  nn::ParameterStore& store = s.model->parameters();
  store.zero_grad();
  if (set_dropout) {
    // Masks of micro-batch k depend on k alone, not on which rank computes it after which
    // other micro-batches (2^36 mask elements per layer and micro-batch leave room for
    // 2^28 micro-batches before a counter wraps).
    const std::vector<uint64_t> counters(s.model->dropout_offsets().size(), uint64_t(global_index)
                                                                                << 36);
    s.model->set_dropout_offsets(counters);
  }
  // The fused projection + loss: the [tokens, V] logits never exist whole (issue 13).
  const autograd::Variable loss = s.model->forward_train_loss(
      b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out,
      {.label_smoothing = s.options.label_smoothing, .ignore_index = s.options.batch.pad_id});
  const double value = loss.value().to(DType::F64).data<double>()[0];
  if (std::isfinite(value)) {
    autograd::backward(loss, on_ready);
  } else {
    autograd::clear_tape();
    float* g = store.grads().data<float>();
    std::fill(g, g + store.numel(), std::numeric_limits<float>::quiet_NaN());
  }
  return value;
}

UpdateRecord Trainer::train_on(const std::vector<data::Batch>& batches) {
  State& s = *s_;
  TrainProgress& p = s.progress;
  nn::ParameterStore& store = s.model->parameters();
  ++p.update;
  UpdateRecord r{.update = p.update};
  for (const data::Batch& b : batches) {
    r.src_tokens += b.src_tokens;
    r.tgt_tokens += b.tgt_tokens;
  }
  p.tokens_seen += r.src_tokens + r.tgt_tokens;
  const auto m = int64_t(batches.size());
  const std::span<float> arena(store.grads().data<float>(), size_t(store.numel()));
  std::span<float> grads = arena;
  std::string detail;
  bool loss_finite = true;
  if (m == 1) {  // the classic trainer: the batch's own gradient, no copy
    r.loss = micro_batch(batches[0], p.micro_batches, false);
    loss_finite = std::isfinite(r.loss);
    if (!loss_finite) detail = "the loss is " + std::to_string(r.loss);
  } else {
    // This rank's share of the update, weighted by target tokens (gradient_exchange.h).
    const int64_t n = s.options.accumulate;
    const int64_t first = int64_t(s.exchange->rank()) * n;
    const bool as_it_goes = s.exchange->sums_as_it_goes();
    s.sum.resize(arena.size());
    if (as_it_goes) std::fill(s.sum.begin(), s.sum.end(), 0.0f);
    if (!as_it_goes) s.own_grads.resize(size_t(n - 1));
    std::vector<WeightedGradient> own;
    std::vector<double> own_losses;
    // The last micro-batch's gradient stays in the arena (nothing clears it before the
    // optimizer step), so the exchange reads it there, region by region as the backward
    // pass completes them when overlapping.
    const float* const arena_begin = arena.data();
    GradientExchange& exchange = *s.exchange;
    const autograd::GradReadyFn on_ready = [&](const autograd::Variable& v) {
      exchange.gradient_ready(size_t(v.grad().data<float>() - arena_begin),
                              size_t(v.grad().numel()));
    };
    const bool overlap = s.options.overlap_exchange;
    for (int64_t i = 0; i < n; ++i) {
      const data::Batch& b = batches[size_t(first + i)];
      const auto weight = float(double(b.tgt_tokens) / double(r.tgt_tokens));
      const int64_t k = p.micro_batches + first + i;
      if (overlap && i + 1 == n) {
        exchange.start_reduce(s.sum, own, {arena, weight});
        own_losses.push_back(micro_batch(b, k, true, on_ready));
        break;
      }
      own_losses.push_back(micro_batch(b, k, true));
      if (as_it_goes) {
        add_weighted(s.sum, arena, weight);
      } else if (i + 1 == n) {
        own.push_back({arena, weight});
      } else {
        s.own_grads[size_t(i)].assign(arena.begin(), arena.end());
        own.push_back({s.own_grads[size_t(i)], weight});
      }
    }
    // What the exchange costs the update: all of it without overlap, what is left of it
    // after the backward pass with.
    const Clock::time_point exchange_start = Clock::now();
    if (overlap)
      exchange.finish_reduce();
    else
      exchange.reduce(s.sum, own);
    grads = s.sum;
    const std::vector<double> losses = s.exchange->gather(std::span<const double>(own_losses));
    s.exchange_seconds += std::chrono::duration<double>(Clock::now() - exchange_start).count();
    ++s.exchanges;
    QKV_CHECK(int64_t(losses.size()) == m, InternalError, "gathered ", losses.size(),
              " losses for ", m, " micro-batches");
    double weighted = 0;
    for (int64_t j = 0; j < m; ++j) {
      weighted += losses[size_t(j)] * double(batches[size_t(j)].tgt_tokens);
      if (loss_finite && !std::isfinite(losses[size_t(j)])) {
        loss_finite = false;
        detail = "the loss of micro-batch " + std::to_string(j + 1) + " of " + std::to_string(m) +
                 " is " + std::to_string(losses[size_t(j)]);
      }
    }
    r.loss = weighted / double(r.tgt_tokens);
  }
  p.micro_batches += m;
  ClipResult clip{.finite = false};
  if (loss_finite) {
    if (s.options.poison_gradients && s.options.poison_gradients(p.update) && !grads.empty())
      grads[0] = std::numeric_limits<float>::quiet_NaN();
    if (s.options.clip_norm > 0) {
      clip = clip_by_global_norm(grads, s.options.clip_norm);
    } else {
      clip.norm = global_norm(grads);
      clip.finite = std::isfinite(clip.norm);
    }
    if (!clip.finite) {
      const int64_t bad = find_non_finite(grads);
      for (const nn::Parameter& param : store.parameters())
        if (bad >= param.offset && bad < param.offset + param.variable.value().numel())
          detail = "the first non-finite gradient is in " + param.name;
    }
  }
  r.grad_norm = clip.norm;
  r.applied = s.guard.admit(clip.finite, p.update, detail);
  if (r.applied) {
    r.learning_rate = learning_rate_at(s.options.schedule, s.adam.step_count() + 1);
    s.adam.step({store.values().data<float>(), size_t(store.numel())}, grads, r.learning_rate);
  }
  store.zero_grad();

  DisplayWindow& w = s.window;
  ++w.updates;
  w.src_tokens += r.src_tokens;
  w.tgt_tokens += r.tgt_tokens;
  if (std::isfinite(r.loss)) {
    w.loss_sum += r.loss * double(r.tgt_tokens);
    w.loss_tokens += r.tgt_tokens;
  }
  return r;
}

}  // namespace qkv::train
