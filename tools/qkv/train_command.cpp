// qkv train: corpora + flags -> a model directory, new or resumed.
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "command.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/experiment/train_session.h"
#include "qkv/io/fault_injection.h"
#ifdef QKV_HAVE_MPI
#include "qkv/train/mpi_exchange.h"
#endif

namespace qkv::tool {
namespace {

// Set by SIGINT/SIGTERM: the trainer stops after the current update and saves. The
// handler restores the default action, so a second Ctrl-C ends the process at once.
std::atomic<bool> g_stop{false};

extern "C" void request_stop(int signal) {
  g_stop.store(true);
  std::signal(signal, SIG_DFL);
}

// Test-only hooks armed from the environment by tests/reliability/*.sh (and
// QKV_TEST_EXCHANGE_CHUNK, by tests/mpi, in make_exchange); with the variables unset
// nothing changes. QKV_TEST_SAVE_DELAY_MS=N (0..60000) pauses every
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

// The number of processes mpirun started (Open MPI's, or a PMI launcher's variable); 0
// when not started by mpirun.
int mpirun_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* text = std::getenv(name)) return std::atoi(text);
  return 0;
}

// The exchange --data-parallel asks for; nullptr: this process trains alone. Here, not in
// the library session: only the launcher knows whether this binary has MPI.
std::shared_ptr<train::GradientExchange> make_exchange(const cli::ParsedOptions& p) {
  const std::string mode = p.get<std::string>("data-parallel");
  const int world = mpirun_world_size();
  QKV_CHECK(mode != "off" || world <= 1, ConfigError, "mpirun started ", world,
            " ranks but --data-parallel is off: each would train the same model into the same "
            "--model directory; drop --data-parallel off, or run without mpirun");
  if (mode == "off" || (mode == "auto" && world <= 1)) return nullptr;
#ifdef QKV_HAVE_MPI
  // Test-only: QKV_TEST_EXCHANGE_CHUNK=N floats per message, so that tiny test models
  // still cut their gradient into many chunks (overlap and chunk order exercised).
  const auto chunk = env_int("QKV_TEST_EXCHANGE_CHUNK", 1, int64_t{1} << 30);
  return train::make_mpi_exchange(p.get<std::string>("gradient-exchange") == "allreduce"
                                      ? train::ExchangeMode::Allreduce
                                      : train::ExchangeMode::Ordered,
                                  chunk ? size_t(*chunk) : train::kAutoChunk);
#else
  QKV_THROW(ConfigError,
            mode == "mpi" ? std::string("--data-parallel mpi:")
                          : "mpirun started " + std::to_string(world) + " ranks, but",
            " this qkv was built without MPI; install Open MPI (libopenmpi-dev openmpi-bin, "
            "scripts/setup.sh) and rebuild, or train in one process");
#endif
}

int train(const cli::ParsedOptions& p, std::shared_ptr<train::GradientExchange>& exchange) {
  TestHooks test_hooks;
  arm_test_hooks(test_hooks);
  experiment::run_training_session(p, {.log = &std::cerr,
                                       .stop_requested = &g_stop,
                                       .before_loop =
                                           [] {
                                             std::signal(SIGINT, request_stop);
                                             std::signal(SIGTERM, request_stop);
                                           },
                                       .after_loop =
                                           [] {
                                             std::signal(SIGINT, SIG_DFL);
                                             std::signal(SIGTERM, SIG_DFL);
                                           },
                                       .make_exchange =
                                           [&] {
                                             exchange = make_exchange(p);
                                             return exchange;
                                           }});
  return kExitOk;
}

}  // namespace

int train_main(int argc, const char* const* argv) {
  std::shared_ptr<train::GradientExchange> exchange;
  const int rc = run_guarded("train", [&] {
    const cli::OptionSet options = experiment::train_options();
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
