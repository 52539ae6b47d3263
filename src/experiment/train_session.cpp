#include "qkv/experiment/train_session.h"

#include <algorithm>
#include <optional>

#include "qkv/base/hash.h"
#include "qkv/base/log.h"
#include "qkv/base/thread_pool.h"
#include "qkv/cli/field_names.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/io/atomic_file.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  const std::vector<std::byte> b = io::read_file(path, uint64_t{1} << 30);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// The vocabulary: the directory's when resuming, --vocab, or one trained into DIR.
data::Vocab vocabulary(const cli::ParsedOptions& p, const fs::path& dir, bool resuming,
                       const data::TextReadOptions& read) {
  const fs::path in_dir = dir / train::kVocabFile;
  if (resuming) {
    data::Vocab v = data::Vocab::load(in_dir);
    QKV_CHECK(!p.has("vocab") || read_bytes(p.get<fs::path>("vocab")) == v.serialized(),
              ConfigError, "--vocab ", p.get<fs::path>("vocab").string(), " differs from ",
              in_dir.string(),
              ", the vocabulary the saved model was trained with; drop --vocab "
              "to resume");
    return v;
  }
  if (p.has("vocab")) return data::Vocab::load(p.get<fs::path>("vocab"));
  const auto [src, tgt] = corpus_files_from(p, "train-sets");
  // Trained where it belongs: the Trainer, which creates the directory otherwise, finds
  // it there and does not write it again.
  std::error_code ec;
  fs::create_directories(dir, ec);
  QKV_CHECK(!ec, IoError, "cannot create the model directory ", dir.string(), ": ", ec.message());
  // train_vocab logs what it trained on.
  data::train_vocab({src, tgt}, int32_t(p.get<int64_t>("vocab-size")), in_dir,
                    {.seed = uint32_t(p.get<int64_t>("seed")), .read = read});
  return data::Vocab::load(in_dir);
}

train::TrainingData load_data(const cli::ParsedOptions& p, data::Vocab vocab,
                              const data::TextReadOptions& read, std::ostream* log) {
  train::TrainingData d{.vocab = std::move(vocab)};
  const auto [src, tgt] = corpus_files_from(p, "train-sets");
  d.train = std::make_shared<data::TokenizedCorpus>(
      data::tokenize(data::read_parallel_corpus(src, tgt, read), d.vocab));
  // Empty files, or every line skipped: name the files (the batcher could only name
  // --max-length).
  QKV_CHECK(d.train->stats.kept > 0, ValueError, "no usable training pair in ", src.string(), " + ",
            tgt.string(), ": ", d.train->stats.describe(),
            "; give files with one sentence per line, aligned line by line");
  if (!p.get_list("valid-sets").empty()) {
    const auto [vsrc, vtgt] = corpus_files_from(p, "valid-sets");
    d.valid = train::make_validation_set(data::read_parallel_corpus(vsrc, vtgt, read), d.vocab);
    if (log) *log << "validation data: " << d.valid->corpus->stats.describe() << "\n";
  }
  return d;
}

// The model for `vocab`: the one checked before any work when the vocabulary has the
// size and special ids it was checked with (a vocabulary trained from --vocab-size has),
// else the flags' model built and checked for it.
models::ModelConfig model_for(const std::optional<models::ModelConfig>& checked,
                              const cli::ParsedOptions& p, const data::Vocab& vocab) {
  if (checked && checked->vocab_size == vocab.size() && checked->pad_id == vocab.pad_id() &&
      checked->bos_id == vocab.bos_id() && checked->eos_id == vocab.eos_id())
    return *checked;
  return model_config_from(p, vocab);
}

// The flags every rank must share, as one hash: all of them but --threads (a node's own
// choice: results do not depend on it).
uint64_t flags_hash(const cli::ParsedOptions& p) {
  std::string kept;
  const std::string yaml = p.dump_yaml();
  size_t begin = 0;
  while (begin < yaml.size()) {
    size_t end = yaml.find('\n', begin);
    if (end == std::string::npos) end = yaml.size();
    const std::string_view line(yaml.data() + begin, end - begin);
    if (!line.starts_with("threads:")) kept.append(line).push_back('\n');
    begin = end + 1;
  }
  return fnv1a_64(kept);
}

// The start-up report: the data, the model, and how an update is split.
void report_start(std::ostream& log, train::Trainer& t, const train::GradientExchange* exchange,
                  int64_t accumulate, bool resuming) {
  const models::ModelConfig& c = t.model().config();
  // Every rank reads the whole corpus (the same batch stream: the start-up check compared
  // the kept pairs), so these counts are every rank's alike.
  log << "training data: " << t.corpus_stats().describe() << "; " << t.batches_per_epoch()
      << " batches per epoch\n"
      << "model: " << models::to_json(c) << ", " << t.model().parameters().numel() << " parameters"
      << (resuming ? ", resumed at update " + std::to_string(t.progress().update) : std::string())
      << "\n";
  const int ranks = exchange != nullptr ? exchange->size() : 1;
  if (ranks > 1 || accumulate > 1)
    log << "update: " << ranks << " rank(s) x " << accumulate
        << " micro-batch(es) = " << ranks * accumulate
        << " micro-batches of --mini-batch-words each"
        << (ranks > 1 ? exchange->mode() == train::ExchangeMode::Ordered
                            ? "; gradients summed in micro-batch order"
                            : "; gradients combined by MPI_Allreduce"
                      : "")
        << "\n";
}

train::TrainSummary train_session(const cli::ParsedOptions& p, const TrainingHooks& hooks) {
  if (p.get<int64_t>("threads") > 0) set_num_threads(int(p.get<int64_t>("threads")));
  // Every flag is checked before any work (a vocabulary can take minutes to train).
  train::TrainerOptions options = trainer_options_from(p);
  corpus_files_from(p, "train-sets");
  if (!p.get_list("valid-sets").empty()) corpus_files_from(p, "valid-sets");
  std::optional<models::ModelConfig> checked;  // the flags' model, before any work
  if (!p.get<bool>("resume") || model_flags_given(p))
    checked = model_config_from(p, std::max<int64_t>(p.get<int64_t>("vocab-size"), 5));
  const std::shared_ptr<train::GradientExchange> exchange =
      hooks.make_exchange ? hooks.make_exchange() : nullptr;
  const bool rank0 = exchange == nullptr || exchange->rank() == 0;
  // One voice: the other ranks read the same data and would repeat rank 0's warnings and
  // progress; their errors still print.
  std::ostream* const log = rank0 ? hooks.log : nullptr;
  if (!rank0 && log_level() < LogLevel::Error) set_log_level(LogLevel::Error);
  if (exchange != nullptr && exchange->size() > 1) {
    QKV_CHECK(p.has("vocab") || p.get<bool>("resume"), ConfigError,
              "--data-parallel: give --vocab FILE (train one with `qkv vocab`): every rank "
              "must use the same vocabulary, and ranks must not train one each");
    options.exchange = exchange;
    options.fingerprint = {{"the flags (all but --threads)", flags_hash(p)}};
  }
  const fs::path dir = options.model_dir;
  const bool saved = fs::exists(dir / train::kTrainStateFile);
  const bool resume = p.get<bool>("resume");
  QKV_CHECK(resume || !saved, ConfigError, "--model ", dir.string(),
            " already holds a training run; pass --resume to continue it, or choose another "
            "--model directory");
  QKV_CHECK(saved || !fs::exists(dir / train::kModelFile), ConfigError, "--model ", dir.string(),
            " holds ", train::kModelFile, " but no ", train::kTrainStateFile,
            ", so there is nothing to resume and nothing to overwrite; choose another --model "
            "directory");
  const bool resuming = resume && saved;
  if (resume && !saved && log)
    *log << "nothing to resume in " << dir.string() << ": starting a new run\n";

  data::TextReadOptions read;
  if (p.get<bool>("skip-invalid")) read.invalid = data::InvalidLines::Skip;
  data::Vocab vocab = vocabulary(p, dir, resuming, read);
  train::TrainingData data = load_data(p, vocab, read, log);

  options.log = log;
  options.stop_requested = hooks.stop_requested;
  options.on_update = hooks.on_update;
  std::optional<train::Trainer> trainer;
  if (resuming) {
    trainer.emplace(train::Trainer::resume(std::move(data), options));
    const models::ModelConfig& saved_config = trainer->model().config();
    QKV_CHECK(!model_flags_given(p) || model_for(checked, p, vocab) == saved_config, ConfigError,
              "--resume: ", dir.string(), " holds the model ", models::to_json(saved_config),
              ", but the model flags given describe another one; drop them to resume");
  } else {
    trainer.emplace(model_for(checked, p, vocab), std::move(data), options);
  }
  if (rank0) {  // the other ranks share rank 0's directory or write nothing to their copy
    const std::string yaml = p.dump_yaml();
    io::remove_stale_temporaries(dir / "train.yml");  // left by a run killed while writing it
    io::write_file_atomically(dir / "train.yml",
                              std::as_bytes(std::span(yaml.data(), yaml.size())));
  }
  if (log) report_start(*log, *trainer, exchange.get(), options.accumulate, resuming);
  if (hooks.before_loop) hooks.before_loop();
  train::TrainSummary s;
  try {
    s = trainer->run();
  } catch (...) {
    if (hooks.after_loop) hooks.after_loop();
    throw;
  }
  if (hooks.after_loop) hooks.after_loop();
  if (s.progress.best_valid_loss && log)
    *log << "best validation cross-entropy " << *s.progress.best_valid_loss << " (BLEU "
         << s.progress.best_valid_bleu << "): " << (dir / train::kBestModelFile).string() << "\n";
  return s;
}

}  // namespace

train::TrainSummary run_training_session(const cli::ParsedOptions& p, const TrainingHooks& hooks) {
  // The session was given flags: the library's field errors name them.
  return cli::naming_flags([&] { return train_session(p, hooks); });
}

}  // namespace qkv::experiment
