// qkv train: corpora + flags -> a model directory, new or resumed.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "command.h"
#include "qkv/base/hash.h"
#include "qkv/base/log.h"
#include "qkv/base/thread_pool.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/io/atomic_file.h"
#include "qkv/io/fault_injection.h"
#include "train_flags.h"
#ifdef QKV_HAVE_MPI
#include "qkv/train/mpi_exchange.h"
#endif

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

// Set by SIGINT/SIGTERM: the trainer stops after the current update and saves. The
// handler restores the default action, so a second Ctrl-C ends the process at once.
std::atomic<bool> g_stop{false};

extern "C" void request_stop(int signal) {
  g_stop.store(true);
  std::signal(signal, SIG_DFL);
}

// Test-only hooks armed from the environment by tests/reliability/*.sh; with both
// variables unset nothing changes. QKV_TEST_SAVE_DELAY_MS=N (0..60000) pauses every
// atomic save N ms between its complete temporary file and the rename, so the kill test
// can land SIGKILLs inside a checkpoint write; QKV_TEST_FAIL_NTH_WRITE=N (>= 1) makes the
// N-th low-level write step of this command (counted from its start: vocab.spm, train.yml,
// then the checkpoints) fail with ENOSPC, as a full disk would.
struct TestHooks {
  std::optional<io::testing::DelayBeforeRename> delay;
  std::optional<io::testing::FailNthWrite> fail;
};

std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view s(text);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  QKV_CHECK(
      !s.empty() && ec == std::errc() && end == s.data() + s.size() && value >= min && value <= max,
      ConfigError, "environment variable ", name, "='", s, "' must be an integer in [", min, ", ",
      max, "] (a test-only setting; unset it for normal training)");
  return value;
}

void arm_test_hooks(TestHooks& hooks) {
  if (const auto ms = env_int("QKV_TEST_SAVE_DELAY_MS", 0, 60'000))
    hooks.delay.emplace(std::chrono::milliseconds(*ms));
  if (const auto n = env_int("QKV_TEST_FAIL_NTH_WRITE", 1, int64_t{1} << 40))
    hooks.fail.emplace(*n);
}

std::pair<fs::path, fs::path> pair_of(const cli::ParsedOptions& p, const char* flag) {
  const std::vector<std::string>& files = p.get_list(flag);
  QKV_CHECK(files.size() == 2, ConfigError, "--", flag,
            " takes two files (source and target), got ", files.size());
  return {files[0], files[1]};
}

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
  const auto [src, tgt] = pair_of(p, "train-sets");
  // train_vocab logs what it trained on.
  data::train_vocab({src, tgt}, int32_t(p.get<int64_t>("vocab-size")), in_dir,
                    {.seed = uint32_t(p.get<int64_t>("seed")), .read = read});
  return data::Vocab::load(in_dir);
}

// The number of processes mpirun started (Open MPI's, or a PMI launcher's variable); 0
// when not started by mpirun.
int mpirun_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* text = std::getenv(name)) return std::atoi(text);
  return 0;
}

// The exchange --data-parallel asks for; nullptr: this process trains alone.
std::shared_ptr<train::GradientExchange> make_exchange(const cli::ParsedOptions& p) {
  const std::string mode = p.get<std::string>("data-parallel");
  const int world = mpirun_world_size();
  QKV_CHECK(mode != "off" || world <= 1, ConfigError, "mpirun started ", world,
            " ranks but --data-parallel is off: each would train the same model into the same "
            "--model directory; drop --data-parallel off, or run without mpirun");
  if (mode == "off" || (mode == "auto" && world <= 1)) return nullptr;
#ifdef QKV_HAVE_MPI
  return train::make_mpi_exchange(p.get<std::string>("gradient-exchange") == "allreduce"
                                      ? train::ExchangeMode::Allreduce
                                      : train::ExchangeMode::Ordered);
#else
  QKV_THROW(ConfigError,
            mode == "mpi" ? std::string("--data-parallel mpi:")
                          : "mpirun started " + std::to_string(world) + " ranks, but",
            " this qkv was built without MPI; install Open MPI (libopenmpi-dev openmpi-bin, "
            "scripts/setup.sh) and rebuild, or train in one process");
#endif
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

// The start-up report (rank 0): the data, the model, and how an update is split.
void report_start(train::Trainer& t, const train::GradientExchange* exchange, int64_t accumulate,
                  bool resuming) {
  const models::ModelConfig& c = t.model().config();
  // Every rank reads the whole corpus (the same batch stream: the start-up check compared
  // the kept pairs), so these counts are every rank's alike.
  std::cerr << "training data: " << t.corpus_stats().describe() << "; " << t.batches_per_epoch()
            << " batches per epoch\n"
            << "model: " << models::to_json(c) << ", " << t.model().parameters().numel()
            << " parameters"
            << (resuming ? ", resumed at update " + std::to_string(t.progress().update)
                         : std::string())
            << "\n";
  const int ranks = exchange != nullptr ? exchange->size() : 1;
  if (ranks > 1 || accumulate > 1)
    std::cerr << "update: " << ranks << " rank(s) x " << accumulate
              << " micro-batch(es) = " << ranks * accumulate
              << " micro-batches of --mini-batch-words each"
              << (ranks > 1 ? exchange->mode() == train::ExchangeMode::Ordered
                                  ? "; gradients summed in micro-batch order"
                                  : "; gradients combined by MPI_Allreduce"
                            : "")
              << "\n";
}

train::TrainingData load_data(const cli::ParsedOptions& p, data::Vocab vocab,
                              const data::TextReadOptions& read, bool report) {
  train::TrainingData d{.vocab = std::move(vocab)};
  const auto [src, tgt] = pair_of(p, "train-sets");
  d.train = std::make_shared<data::TokenizedCorpus>(
      data::tokenize(data::read_parallel_corpus(src, tgt, read), d.vocab));
  // Empty files, or every line skipped: name the files (the batcher could only name
  // --max-length).
  QKV_CHECK(d.train->stats.kept > 0, ValueError, "no usable training pair in ", src.string(), " + ",
            tgt.string(), ": ", d.train->stats.describe(),
            "; give files with one sentence per line, aligned line by line");
  if (!p.get_list("valid-sets").empty()) {
    const auto [vsrc, vtgt] = pair_of(p, "valid-sets");
    d.valid = train::make_validation_set(data::read_parallel_corpus(vsrc, vtgt, read), d.vocab);
    if (report) std::cerr << "validation data: " << d.valid->corpus->stats.describe() << "\n";
  }
  return d;
}

int train(const cli::ParsedOptions& p, std::shared_ptr<train::GradientExchange>& exchange) {
  TestHooks test_hooks;
  arm_test_hooks(test_hooks);
  if (p.get<int64_t>("threads") > 0) set_num_threads(int(p.get<int64_t>("threads")));
  // Every flag is checked before any work (a vocabulary can take minutes to train).
  train::TrainerOptions options = trainer_options_from(p);
  pair_of(p, "train-sets");
  if (!p.get_list("valid-sets").empty()) pair_of(p, "valid-sets");
  if (!p.get<bool>("resume") || model_flags_given(p))
    model_config_from(p, std::max<int64_t>(p.get<int64_t>("vocab-size"), 5));
  exchange = make_exchange(p);
  const bool rank0 = exchange == nullptr || exchange->rank() == 0;
  // One voice: the other ranks read the same data and would repeat rank 0's warnings;
  // their errors still print.
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
  if (resume && !saved && rank0)
    std::cerr << "nothing to resume in " << dir.string() << ": starting a new run\n";
  std::error_code ec;
  fs::create_directories(dir, ec);
  QKV_CHECK(!ec, IoError, "cannot create the model directory ", dir.string(), ": ", ec.message());

  data::TextReadOptions read;
  if (p.get<bool>("skip-invalid")) read.invalid = data::InvalidLines::Skip;
  data::Vocab vocab = vocabulary(p, dir, resuming, read);
  train::TrainingData data = load_data(p, vocab, read, rank0);

  options.log = rank0 ? &std::cerr : nullptr;  // one voice: rank 0's
  options.stop_requested = &g_stop;
  std::optional<train::Trainer> trainer;
  if (resuming) {
    trainer.emplace(train::Trainer::resume(std::move(data), options));
    const models::ModelConfig& saved_config = trainer->model().config();
    QKV_CHECK(!model_flags_given(p) || model_config_from(p, vocab) == saved_config, ConfigError,
              "--resume: ", dir.string(), " holds the model ", models::to_json(saved_config),
              ", but the model flags given describe another one; drop them to resume");
  } else {
    trainer.emplace(model_config_from(p, vocab), std::move(data), options);
  }
  if (rank0) {
    const std::string yaml = p.dump_yaml();
    io::remove_stale_temporaries(dir / "train.yml");  // left by a run killed while writing it
    io::write_file_atomically(dir / "train.yml",
                              std::as_bytes(std::span(yaml.data(), yaml.size())));
    report_start(*trainer, exchange.get(), options.accumulate, resuming);
  }
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  const train::TrainSummary s = trainer->run();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (s.progress.best_valid_loss && rank0)
    std::cerr << "best validation cross-entropy " << *s.progress.best_valid_loss << " (BLEU "
              << s.progress.best_valid_bleu << "): " << (dir / train::kBestModelFile).string()
              << "\n";
  return kExitOk;
}

}  // namespace

int train_main(int argc, const char* const* argv) {
  std::shared_ptr<train::GradientExchange> exchange;
  const int rc = run_guarded("train", [&] {
    const cli::OptionSet options = train_options();
    const cli::ParsedOptions p = options.parse(argc, argv);
    if (p.help_requested()) {
      std::cout << options.format_help(
          "qkv", "train",
          "Trains an RNN encoder-decoder (without attention, with Luong or Bahdanau attention) "
          "or a Transformer on parallel text, into a model directory. Flags can also come from "
          "a YAML file (-c FILE) whose keys are the flag names.");
      return kExitOk;
    }
    return train(p, exchange);
  });
  // A rank that fails alone (a full disk on rank 0, say) must not leave the others
  // waiting for it in the next exchange: end the whole job, with this rank's message
  // already printed.
#ifdef QKV_HAVE_MPI
  if (rc != kExitOk && exchange != nullptr && exchange->size() > 1) train::abort_mpi_job(rc);
#endif
  return rc;
}

}  // namespace qkv::tool
